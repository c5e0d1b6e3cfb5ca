@testable import DropFetch
import CCurl
import Foundation
import Testing

/// Issue 26: a download split over several connections against the in-test server, driven by a
/// multi handle as the agent's loop drives it. Not yet started by the agent itself.
@Suite("Segmented downloads")
struct SegmentedDownloadTests {
    static let mib = 1 << 20

    /// Runs `download` to its end; returns the part's bytes.
    private func drive(_ download: SegmentedDownload) throws -> [UInt8] {
        let multi = try CurlMulti()
        for transfer in try download.fill() { try multi.add(transfer.easy) }
        let deadline = ContinuousClock.now + .seconds(30)
        while !download.running.isEmpty, ContinuousClock.now < deadline {
            try multi.perform()
            for (key, result) in multi.completed() {
                guard let transfer = download.running[key]?.transfer else { continue }
                multi.remove(transfer.easy)
                for next in try download.ended(key: key, transfer.finish(result)) { try multi.add(next.easy) }
                if download.restartReason != nil {
                    for other in download.stopAll() { multi.remove(other.easy) }
                }
            }
            var none: [curl_waitfd] = []
            if !download.running.isEmpty { try multi.poll(extra: &none, timeoutMS: 100) }
        }
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: download.part.path)))
    }

    private func download(_ server: TestHTTPServer, total: Int, map: PieceMap? = nil, connections: Int = 8,
                          in path: String) throws -> SegmentedDownload {
        let folder = try DirectoryHandle.openRoot(path, create: true)
        guard case .ours(let part) = try PartFile.reserve("f.bin", in: folder, for: PartOwner(job: "f.url", claim: 1),
                                                          mode: 0o644, durable: false,
                                                          key: RecordKey(bytes: Array(repeating: 9, count: 32))) else {
            throw SystemError(code: EEXIST, operation: "reserve")
        }
        let request = TransferRequest(url: server.url("/f.bin"), maxFileSize: .max, connectTimeout: .seconds(5),
                                      lowSpeed: Config.LowSpeed(), protocols: ["http"])
        return SegmentedDownload(request: request, part: part, map: map ?? PieceMap(total: Int64(total)),
                                 validator: "\"v1\"", connections: connections, minSize: Int64(Self.mib))
    }

    private func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("split-\(UUID().uuidString)").path
    }

    @Test("8 MiB over 8 connections: 8 requests, one per MiB, each its own range; the file's sha256 is right")
    func eightSegments() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8 * Self.mib, seed: 26)
        server.serve("/f.bin", body: body, etag: "\"v1\"")
        let path = folder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let download = try download(server, total: body.count, in: path)
        let data = try drive(download)
        #expect(download.isComplete && download.restartReason == nil)
        #expect(TestHTTPServer.sha256Hex(data) == TestHTTPServer.sha256Hex(body))
        let ranges = server.completedRequests().compactMap { $0.header("range") }.sorted()
        let expected = (0..<8).map { "bytes=\($0 * Self.mib)-\(($0 + 1) * Self.mib - 1)" }.sorted()
        #expect(ranges == expected)
        #expect(Set(server.completedRequests().map(\.connectionID)).count == 8)
    }

    @Test("a resumed download asks only for its missing pieces")
    func missingPiecesOnly() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(6 * Self.mib, seed: 27)
        server.serve("/f.bin", body: body, etag: "\"v1\"")
        let path = folder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let map = PieceMap(total: Int64(body.count), done: [.init(0, Int64(2 * Self.mib)), .init(Int64(4 * Self.mib), Int64(5 * Self.mib))])
        let download = try download(server, total: body.count, map: map, in: path)
        for range in map.done {
            try download.part.file.write(Array(body[Int(range.start)..<Int(range.end)]), at: range.start)
        }
        let data = try drive(download)
        #expect(TestHTTPServer.sha256Hex(data) == TestHTTPServer.sha256Hex(body))
        for request in server.completedRequests() {
            let range = try #require(request.header("range"))
            let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int64($0) }
            let asked = PieceMap(total: map.total, done: [.init(bounds[0], bounds[1] + 1)])
            #expect(asked.intersection(map).done.isEmpty, "asked again for done bytes: \(range)")
        }
    }

    @Test("the file changes on the server after the first segment's request: every segment stops, nothing of the new file is written")
    func changedFileNeverSpliced() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8 * Self.mib, seed: 28)
        let changed = TestHTTPServer.randomBytes(8 * Self.mib, seed: 29)
        server.serve("/f.bin", body: body, etag: "\"v1\"",
                     faults: [.changeETagAfterFirstRequest(to: "\"v2\"", body: changed)])
        let path = folder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let download = try download(server, total: body.count, in: path)
        let data = try drive(download)
        #expect(download.restartReason != nil)
        #expect(!download.isComplete)
        for range in download.plan.map.done {
            #expect(Array(data[Int(range.start)..<Int(range.end)]) == Array(body[Int(range.start)..<Int(range.end)]))
        }
        for start in stride(from: 0, to: data.count, by: Self.mib) where download.plan.map.done.allSatisfy({ $0.end <= Int64(start) || $0.start > Int64(start) }) {
            #expect(Array(data[start..<min(data.count, start + 4096)]) != Array(changed[start..<start + 4096]), "new bytes at \(start)")
        }
    }

    @Test("a server that answers ranges with 200: the download stops for a restart on one connection, nothing written")
    func rangesAnsweredWhole() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(4 * Self.mib, seed: 30)
        server.serve("/f.bin", body: body, etag: "\"v1\"", faults: [.ignoreRange])
        let path = folder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let download = try download(server, total: body.count, in: path)
        let data = try drive(download)
        #expect(download.restartReason == "HTTP 200 to a segment's Range request")
        #expect(download.plan.map.done.isEmpty && data.allSatisfy { $0 == 0 })
    }

    @Test("work stealing: when the fast segment ends it takes the back half of the slow one, which stops early")
    func workStealing() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8 * Self.mib, seed: 31)
        server.serve("/f.bin", body: body, etag: "\"v1\"",
                     faults: [.times(1, .drip(bytesPerChunk: 64 << 10, interval: .milliseconds(50)))])
        let path = folder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let download = try download(server, total: body.count, connections: 2, in: path)
        let data = try drive(download)
        #expect(TestHTTPServer.sha256Hex(data) == TestHTTPServer.sha256Hex(body))
        let requests = server.requests
        #expect(requests.count > 2, "no segment was stolen: \(requests.map { $0.header("range") ?? "" })")
        let first = requests.prefix(2)
        #expect(Set(first.compactMap { $0.header("range") }) == ["bytes=0-4194303", "bytes=4194304-8388607"])
        #expect(first.contains { $0.bodyBytesSent < 4 * Self.mib }, "the slow segment ran to its first end")
        let starts = requests.dropFirst(2).compactMap { Int($0.header("range")?.dropFirst("bytes=".count).split(separator: "-").first ?? "") }
        #expect(!starts.isEmpty && starts.allSatisfy { $0 % (4 * Self.mib) != 0 }, "stolen pieces start inside a segment: \(starts)")
    }
}
