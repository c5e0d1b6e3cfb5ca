@testable import DropFetch
import CCurl
import Foundation
import Testing

/// Issue 26: one extra connection of a segmented download against the in-test server. It asks for
/// exactly its range with If-Range, writes nothing unless the answer is that range of the same
/// file, and writes at its offset, never past its (possibly shrunk) end.
@Suite("Segment transfers")
struct SegmentTransferTests {
    static let total = 300_000
    static let body = TestHTTPServer.randomBytes(total)

    /// A part of `total` zero bytes, a segment transfer of `[start, end)` on it, and its run to the end.
    private func run(_ server: TestHTTPServer, start: Int64, end: Int64, validator: String = "\"v1\"",
                     shrinkTo: Int64? = nil) throws -> (TransferOutcome, [UInt8], [PieceMap.Range]) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("segment-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try DirectoryHandle.openRoot(path, create: true)
        guard case .ours(let part) = try PartFile.reserve("f.bin", in: folder, for: PartOwner(job: "f.url", claim: 1),
                                                          mode: 0o644, durable: false,
                                                          key: RecordKey(bytes: Array(repeating: 9, count: 32))) else {
            throw SystemError(code: EEXIST, operation: "reserve")
        }
        try part.file.truncate(to: Int64(Self.total))
        let request = TransferRequest(url: server.url("/f.bin"), maxFileSize: .max, connectTimeout: .seconds(5),
                                      lowSpeed: Config.LowSpeed(), protocols: ["http"], protocolList: "http")
        let window = SegmentWindow(id: 1, start: start, end: end, total: Int64(Self.total), validator: validator)
        var pieces: [PieceMap.Range] = []
        window.wrote = { pieces.append($0) }
        if let shrinkTo { window.end = shrinkTo }
        let transfer = try Transfer(request, segment: window, part: part)
        let multi = try CurlMulti()
        try multi.add(transfer.easy)
        let deadline = ContinuousClock.now + .seconds(20)
        var result: CURLcode?
        while result == nil, ContinuousClock.now < deadline {
            try multi.perform()
            result = multi.completed().first { $0.key == transfer.easy.key }?.result
            var none: [curl_waitfd] = []
            if result == nil { try multi.poll(extra: &none, timeoutMS: 100) }
        }
        multi.remove(transfer.easy)
        let outcome = transfer.finish(try #require(result))
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "/" + part.name)))
        return (outcome, data, pieces)
    }

    private func completedBytes(_ outcome: TransferOutcome) -> Int64? {
        if case .completed(let result) = outcome { return result.bytes }
        return nil
    }

    @Test("a segment asks for its range with If-Range and writes exactly those bytes at their offset")
    func writesItsRange() throws {
        let server = try TestHTTPServer()
        server.serve("/f.bin", body: Self.body, etag: "\"v1\"")
        let (outcome, data, pieces) = try run(server, start: 100_000, end: 200_000)
        #expect(completedBytes(outcome) == 100_000)
        #expect(server.requests.map { $0.header("range") } == ["bytes=100000-199999"])
        #expect(server.requests.map { $0.header("if-range") } == ["\"v1\""])
        #expect(data.count == Self.total)
        #expect(Array(data[100_000..<200_000]) == Array(Self.body[100_000..<200_000]))
        #expect(data[..<100_000].allSatisfy { $0 == 0 } && data[200_000...].allSatisfy { $0 == 0 })
        var map = PieceMap(total: Int64(Self.total))
        for piece in pieces { map.add(piece) }
        #expect(map.done == [.init(100_000, 200_000)])
    }

    @Test("a server that answers the range with 200: nothing is written, the download restarts")
    func wholeFileAnswer() throws {
        let server = try TestHTTPServer()
        server.serve("/f.bin", body: Self.body, etag: "\"v1\"", faults: [.ignoreRange])
        let (outcome, data, pieces) = try run(server, start: 100_000, end: 200_000)
        guard case .restart(let reason) = outcome else {
            Issue.record("not a restart: \(outcome)")
            return
        }
        #expect(reason == "HTTP 200 to a segment's Range request")
        #expect(data.allSatisfy { $0 == 0 } && pieces.isEmpty)
    }

    @Test("the file changed on the server (another ETag): nothing is written, never a spliced file")
    func changedFile() throws {
        let server = try TestHTTPServer()
        server.serve("/f.bin", body: TestHTTPServer.randomBytes(Self.total, seed: 2), etag: "\"v2\"")
        let (outcome, data, _) = try run(server, start: 100_000, end: 200_000)
        guard case .restart = outcome else {
            Issue.record("not a restart: \(outcome)")
            return
        }
        #expect(data.allSatisfy { $0 == 0 })
    }

    @Test("a segment whose back half was stolen stops at its new end and writes nothing past it")
    func stopsAtShrunkEnd() throws {
        let server = try TestHTTPServer()
        server.serve("/f.bin", body: Self.body, etag: "\"v1\"")
        let (outcome, data, _) = try run(server, start: 100_000, end: 200_000, shrinkTo: 150_000)
        #expect(completedBytes(outcome) == 50_000)
        #expect(server.requests.map { $0.header("range") } == ["bytes=100000-199999"])
        #expect(Array(data[100_000..<150_000]) == Array(Self.body[100_000..<150_000]))
        #expect(data[150_000...].allSatisfy { $0 == 0 })
    }
}
