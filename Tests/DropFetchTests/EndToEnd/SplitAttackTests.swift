import Foundation
import Testing

/// Issue 35, items 2 and 4 (and issue 36's attempt rule): a split download against servers that
/// break it — one that closes every answer after 100,000 bytes, one that answers ranges with 500,
/// one whose ranges fail `checksum=` (docs/config.md `retry.attempts`, `split`).
@Suite("Split downloads under attack")
struct SplitAttackTests {
    static let mib = 1 << 20

    @Test("a server that closes every answer (206s included) after 100,000 bytes: the job fails after 100 attempts in all, not for ever")
    func attemptCeiling() throws {
        let server = try TestHTTPServer()
        // The first answer comes slowly enough to be split; eight connections then add 800,000 bytes
        // an attempt (more than the 1 MiB the old rule wanted, counted from the prefix, from the
        // second attempt on): 100 attempts fetch 80 MB of the 96 MiB.
        server.serve("/c.bin", body: TestHTTPServer.randomBytes(96 * Self.mib, seed: 3510),
                     faults: [.times(1, .drip(bytesPerChunk: 10_000, interval: .milliseconds(20))), .dropAfter(bytes: 100_000)])
        let fixture = try SpoolFixture(extraConfig: "split: { connections: 8, min_size: 1MiB }\nconcurrency: { total: 8, per_host: 8 }\n")
        try fixture.drop("c.url", server.url("/c.bin") + "\n")
        try fixture.startDaemon()
        defer { _ = try? fixture.stopDaemon() }
        #expect(try waitUntil(timeout: .seconds(150)) { fixture.jobs(in: "failed") == ["c.url"] }, "\(fixture.logTail(8))")
        let status = try fixture.status("failed", "c.url")
        #expect(status.attempts == 100, "attempts \(status.attempts): \(fixture.logTail(8))")
        #expect(status.downloads.first?.error?.kind == .network)
        #expect(fixture.log.contains("download split"), "the download was never split")
        #expect(!fixture.log.contains("attempt=101"))
    }

    @Test("ranges answered with 500: the split is refused and the file is fetched on one connection from the start, sha256 right")
    func rangeErrorFallsBackToOneConnection() throws {
        let body = TestHTTPServer.randomBytes(16 * Self.mib, seed: 3511)
        let server = try ScriptedHTTPServer { head, _ in
            head.header("Range") == nil ? .file(body, etag: "\"s1\"", range: nil) : ScriptedHTTPServer.Answer(status: 500)
        }
        let fixture = try SpoolFixture(extraConfig: "split: { connections: 4, min_size: 1MiB }\nconcurrency: { total: 4, per_host: 4 }\n")
        try fixture.drop("r.url", server.url("/r.bin") + "\n")
        #expect(try fixture.runOnce(timeout: 60) == 0, "\(fixture.logTail())")
        #expect(fixture.downloaded("r.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let requests = server.requests
        let refused = try #require(requests.firstIndex { $0.header("range") != nil }, "no range was asked for: the download was not split")
        // After the refusal, the file is asked for whole again (segments already on their way may still arrive).
        #expect(requests[(refused + 1)...].contains { $0.header("range") == nil }, "\(requests.map { $0.header("range") ?? "whole" })")
        #expect(fixture.log.contains("starting over on one connection"), "\(fixture.logTail())")
    }

    @Test("pieces that fail checksum=: the next attempt runs on one connection and gets the file right")
    func checksumFailureFallsBackToOneConnection() throws {
        let body = TestHTTPServer.randomBytes(16 * Self.mib, seed: 3512)
        var corrupt = body
        for index in stride(from: 4 * Self.mib, to: corrupt.count, by: 4096) { corrupt[index] ^= 0xFF }
        let spliced = corrupt
        let server = try ScriptedHTTPServer { head, _ in
            .file(head.header("Range") == nil ? body : spliced, etag: "\"s1\"", range: head.header("Range"))
        }
        let fixture = try SpoolFixture(extraConfig: "split: { connections: 4, min_size: 1MiB }\nconcurrency: { total: 4, per_host: 4 }\n")
        try fixture.drop("k.url", server.url("/k.bin") + "\n  checksum=sha-256=\(TestHTTPServer.sha256Hex(body))\n")
        #expect(try fixture.runOnce(timeout: 60) == 0, "\(fixture.logTail())")
        #expect(fixture.downloaded("k.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(fixture.log.contains("checksum_mismatch"), "the first attempt was not split: \(fixture.logTail())")
        #expect(try fixture.status("done", "k.url").attempts == 2)
    }
}
