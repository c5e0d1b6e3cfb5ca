@testable import DropFetch
import Foundation
import Testing

/// `digest: none`: downloads are not hashed for the status file, and a job's `checksum=` is still
/// verified.
@Suite("digest: none, end to end")
struct DigestChoiceTests {
    /// The `sha256` of the first download entry of a filed job, as the status file holds it.
    private func statusSHA256(_ fixture: SpoolFixture, _ folder: String, _ job: String) throws -> Any? {
        let json = try fixture.statusJSON(folder, job)
        return try #require((json["downloads"] as? [[String: Any]])?.first)["sha256"]
    }

    @Test("a small and a large download are done, right on disk, with sha256 null in the status file")
    func noneLeavesSHA256Null() throws {
        let server = try TestHTTPServer()
        let small = TestHTTPServer.randomBytes(40_000, seed: 90)
        // Over DownloadDigest.backgroundThreshold, where sha256 would be hashed by a worker thread.
        let large = TestHTTPServer.randomBytes(9_000_000, seed: 91)
        server.serve("/small.bin", body: small)
        server.serve("/large.bin", body: large)
        let fixture = try SpoolFixture(extraConfig: "digest: none\n")
        try fixture.drop("small.url", server.url("/small.bin") + "\n")
        try fixture.drop("large.url", server.url("/large.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.jobs(in: "done") == ["large.url", "small.url"])
        #expect(fixture.downloaded("small.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(small))
        #expect(fixture.downloaded("large.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(large))
        for job in ["small.url", "large.url"] {
            let download = try #require(try fixture.status("done", job).downloads.first)
            #expect(download.state == .done)
            #expect(download.sha256 == nil)
            #expect(try statusSHA256(fixture, "done", job) is NSNull, "sha256 is written as null")
        }
    }

    @Test("a download cut halfway resumes under digest: none and is done, sha256 null")
    func noneResumes() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_000_000, seed: 92)
        server.serve("/cut.bin", body: body, faults: [.times(1, .dropAfter(bytes: 500_000))])
        let fixture = try SpoolFixture(extraConfig: "digest: none\n")
        try fixture.drop("cut.url", server.url("/cut.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.downloaded("cut.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let download = try #require(try fixture.status("done", "cut.url").downloads.first)
        #expect(download.resumedFrom > 0)
        #expect(download.sha256 == nil)
    }

    @Test("checksum= is still verified under digest: none: a right one is done, a wrong one fails with checksum_mismatch")
    func noneStillVerifiesChecksums() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(70_000, seed: 93)
        server.serve("/c.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "digest: none\n")
        let sha256 = TestHTTPServer.sha256Hex(body)
        let md5 = Digest(.md5)
        body.withUnsafeBytes { md5.update($0) }
        try fixture.drop("good.url", "\(server.url("/c.bin"))\n  checksum=sha-256=\(sha256)\n  out=good.bin\n")
        try fixture.drop("goodmd5.url", "\(server.url("/c.bin"))\n  checksum=md5=\(md5.finalize())\n  out=goodmd5.bin\n")
        try fixture.drop("bad.url", "\(server.url("/c.bin"))\n  checksum=sha-256=\(String(repeating: "0", count: 64))\n  out=bad.bin\n")
        try fixture.drop("badmd5.url", "\(server.url("/c.bin"))\n  checksum=md5=\(String(repeating: "a", count: 32))\n  out=badmd5.bin\n")

        #expect(try fixture.runOnce() == 1)

        #expect(fixture.jobs(in: "done") == ["good.url", "goodmd5.url"])
        #expect(fixture.jobs(in: "failed") == ["bad.url", "badmd5.url"])
        for job in ["bad.url", "badmd5.url"] {
            #expect(try fixture.status("failed", job).error?.kind == .checksumMismatch)
        }
        #expect(fixture.destinationNames() == [".bad.bin.bad", ".badmd5.bin.bad", "good.bin", "goodmd5.bin"])
        #expect(fixture.downloaded("good.bin").map(TestHTTPServer.sha256Hex) == sha256)
        #expect(fixture.downloaded("goodmd5.bin").map(TestHTTPServer.sha256Hex) == sha256)
        for job in ["good.url", "goodmd5.url"] {
            #expect(try fixture.status("done", job).downloads.first?.sha256 == nil)
        }
    }

    @Test("a resumed download with a checksum= under digest: none hashes its prefix and is verified")
    func noneResumedChecksum() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_000_000, seed: 94)
        server.serve("/cut.bin", body: body, faults: [.times(1, .dropAfter(bytes: 500_000))])
        server.serve("/cut2.bin", body: body, faults: [.times(1, .dropAfter(bytes: 500_000))])
        let fixture = try SpoolFixture(extraConfig: "digest: none\n")
        let md5 = Digest(.md5)
        body.withUnsafeBytes { md5.update($0) }
        try fixture.drop("good.url", "\(server.url("/cut.bin"))\n  checksum=md5=\(md5.finalize())\n")
        try fixture.drop("bad.url", "\(server.url("/cut2.bin"))\n  checksum=sha-256=\(String(repeating: "1", count: 64))\n")

        #expect(try fixture.runOnce() == 1)

        #expect(fixture.downloaded("cut.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let good = try #require(try fixture.status("done", "good.url").downloads.first)
        #expect(good.resumedFrom > 0)
        #expect(good.sha256 == nil)
        #expect(try fixture.status("failed", "bad.url").error?.kind == .checksumMismatch)
    }
}
