@testable import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 23, item 5: the digests of a download arrive as an event. A 416 "already complete" to a
/// resumed request makes the worker hash the whole `.part` (1 GiB here); the event loop polls for
/// the result instead of joining the worker, so its longest turn stays short.
@Suite("Digests arrive as an event, end to end")
struct DigestEventTests {
    static let size = 1 << 30

    @Test("a 416 for a complete 1 GiB .part: filed done with the right sha256, no loop turn waits for the hashing")
    func alreadyCompleteDoesNotStallTheLoop() throws {
        let server = try ScriptedHTTPServer { head, _ in
            head.header("Range") == "bytes=\(Self.size)-"
                ? ScriptedHTTPServer.Answer(status: 416, headers: [("Content-Range", "bytes */\(Self.size)"), ("ETag", "\"v1\"")])
                : ScriptedHTTPServer.Answer(status: 500)
        }
        let fixture = try SpoolFixture()
        let metrics = fixture.root.path + "/dropfetch.prom"
        try fixture.writeConfig("metrics_file: \(metrics)\n")
        let job = try fixture.dropSettled("big.url", server.url("/big.bin") + "\n")
        let claim = try #require(try FileManager.default.attributesOfItem(atPath: job)[.systemFileNumber] as? Int)

        // The complete data of an earlier run on this boot (sparse: the hashing reads 1 GiB of
        // zeros) and its record, sealed with this user's key as the agent seals it.
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        let part = fixture.destination + "/.big.bin.part"
        #expect(FileManager.default.createFile(atPath: part, contents: nil))
        #expect(truncate(part, off_t(Self.size)) == 0)
        let inode = try #require(try FileManager.default.attributesOfItem(atPath: part)[.systemFileNumber] as? Int)
        var record = ResumeRecord(owner: "big.url", claim: UInt64(claim), part: UInt64(inode))
        record.describe(url: server.url("/big.bin"), mirror: 0, etag: "\"v1\"", lastModified: nil, size: Int64(Self.size))
        record.boot = BootID.current
        let key = try RecordKey.loadOrCreate(inFolder: try #require(RecordKey.folder()))
        try Data(ResumeRecordFile.image(record, key: key)).write(to: URL(fileURLWithPath: part + ".json"))

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let requests = server.requests
        #expect(requests.count == 1 && requests.first?.header("Range") == "bytes=\(Self.size)-", "\(requests)")
        let zeros = Digest(.sha256)
        let chunk = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<(Self.size >> 20) { chunk.withUnsafeBytes { zeros.update($0) } }
        let status = try fixture.status("done", "big.url")
        #expect(status.downloads.first?.sha256 == zeros.finalize())
        #expect(status.downloads.first?.bytes == Int64(Self.size))
        // Hashing 1 GiB takes the worker about half a second or more; a loop that joined it would
        // have had a turn that long. A quarter of a second leaves room for a busy machine.
        let stall = try #require(try Metrics(metrics)["dropfetch_loop_stall_seconds"])
        #expect(stall < 0.25, "the longest loop turn was \(stall) s")
    }
}
