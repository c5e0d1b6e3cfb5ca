import DropFetch
import Foundation
import Testing

/// The core agent end to end: the real binary, a real HTTP server, real files.
@Suite("Core agent, end to end")
struct CoreAgentTests {
    @Test("run --once downloads both job forms, files them in done/ with full status, exits 0")
    func onceDownloadsBothForms() throws {
        let server = try TestHTTPServer()
        let a = TestHTTPServer.randomBytes(300_000, seed: 1)
        let b = TestHTTPServer.randomBytes(5_000, seed: 2)
        server.serve("/files/a.bin", body: a)
        server.serve("/files/b.bin", body: b)
        let fixture = try SpoolFixture()
        try fixture.drop("shortcut.url", "[InternetShortcut]\r\nURL=\(server.url("/files/a.bin"))\r\nIconIndex=0\r\n")
        try fixture.drop("list.url", "# a list\npriority=5\n\(server.url("/files/b.bin"))\n  out=renamed.bin\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.jobs(in: "done") == ["list.url", "shortcut.url"])
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.jobs(in: "inbox").isEmpty)
        #expect(fixture.downloaded("a.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(a))
        #expect(fixture.downloaded("renamed.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(b))
        #expect(fixture.destinationNames() == ["a.bin", "renamed.bin"])

        let status = try fixture.status("done", "list.url")
        #expect(status.job == "list.url")
        #expect(status.state == .done)
        #expect(status.priority == 5)
        #expect(status.agent == "test-agent")
        #expect(status.attempts == 1)
        #expect(status.error == nil)
        let download = try #require(status.downloads.first)
        #expect(download.state == .done)
        #expect(download.bytes == 5_000)
        #expect(download.httpStatus == 200)
        #expect(download.resumedFrom == 0)
        #expect(download.sha256 == TestHTTPServer.sha256Hex(b))
        #expect(download.file == fixture.destination + "/renamed.bin")
        #expect(download.connections == 1, "not split: one connection")
        #expect(download.fetched == 5_000, "all of it fetched by this run")

        let json = try fixture.statusJSON("done", "shortcut.url")
        for key in ["schema", "job", "state", "class", "priority", "agent", "submitted", "started", "finished",
                    "attempts", "downloads", "error"] {
            #expect(json[key] != nil, "status file lacks \(key)")
        }
        #expect(json["error"] is NSNull)
        let entry = try #require((json["downloads"] as? [[String: Any]])?.first)
        for key in ["url", "file", "state", "bytes", "http_status", "resumed_from", "sha256", "seconds", "error"] {
            #expect(entry[key] != nil, "download entry lacks \(key)")
        }
    }

    @Test("a transfer cut halfway resumes with Range from the .part size")
    func resumesAfterDrop() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_000_000, seed: 3)
        server.serve("/big.bin", body: body, faults: [.times(1, .dropAfter(bytes: 500_000))])
        let fixture = try SpoolFixture()
        try fixture.drop("big.url", server.url("/big.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let requests = server.completedRequests()
        #expect(requests.map(\.status) == [200, 206])
        let range = try #require(requests.last?.header("Range"))
        let offset = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
        #expect(offset >= 400_000 && offset <= 500_000)
        #expect(requests.last?.header("If-Range") == "\"v1\"")
        let status = try fixture.status("done", "big.url")
        #expect(status.downloads.first?.resumedFrom == Int64(offset))
        #expect(status.downloads.first?.httpStatus == 206)
        #expect(status.attempts == 2)
        #expect(fixture.destinationNames() == ["big.bin"])
    }

    @Test("a server that ignores Range still yields the right file")
    func ignoredRangeRestarts() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(400_000, seed: 4)
        server.serve("/x.bin", body: body, faults: [.times(1, .dropAfter(bytes: 150_000)), .ignoreRange])
        let fixture = try SpoolFixture()
        try fixture.drop("x.url", server.url("/x.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.downloaded("x.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let requests = server.completedRequests()
        #expect(requests.count == 2)
        #expect(requests.last?.header("Range") != nil)
        #expect(requests.last?.status == 200)
        #expect(try fixture.status("done", "x.url").downloads.first?.bytes == 400_000)
    }

    @Test("a file whose ETag changes mid-way is fetched whole again, never spliced")
    func etagChangeRestarts() throws {
        let server = try TestHTTPServer()
        let old = TestHTTPServer.randomBytes(300_000, seed: 5)
        let new = TestHTTPServer.randomBytes(300_000, seed: 6)
        server.serve("/f.bin", body: old, faults: [
            .times(1, .dropAfter(bytes: 100_000)),
            .times(1, .changeETagAfterFirstRequest(to: "\"v2\"", body: new)),
        ])
        let fixture = try SpoolFixture()
        try fixture.drop("f.url", server.url("/f.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.downloaded("f.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(new))
        let last = try #require(server.completedRequests().last)
        #expect(last.header("If-Range") == "\"v1\"")
        #expect(last.status == 200)
    }

    @Test("404 fails the job with http_status, writes no data file, and the other jobs are done; exit 1")
    func notFoundFails() throws {
        let server = try TestHTTPServer()
        let good = TestHTTPServer.randomBytes(10_000, seed: 7)
        server.serve("/good.bin", body: good)
        let fixture = try SpoolFixture()
        try fixture.drop("missing.url", server.url("/missing.bin") + "\n")
        try fixture.drop("good.url", server.url("/good.bin") + "\n")

        #expect(try fixture.runOnce() == 1)

        #expect(fixture.jobs(in: "failed") == ["missing.url"])
        #expect(fixture.jobs(in: "done") == ["good.url"])
        let status = try fixture.status("failed", "missing.url")
        #expect(status.state == .failed)
        #expect(status.error?.kind == .httpStatus)
        #expect(status.downloads.first?.httpStatus == 404)
        #expect(status.attempts == 1)
        #expect(fixture.destinationNames() == ["good.bin"])
    }

    @Test("503 is retried with backoff; a short body is detected and resumed")
    func transientErrorsRetry() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(200_000, seed: 8)
        server.serve("/r.bin", body: body, faults: [
            .times(1, .status(code: 503)), .times(1, .lyingContentLength(300_000)),
        ])
        let fixture = try SpoolFixture()
        try fixture.drop("r.url", server.url("/r.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.downloaded("r.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let status = try fixture.status("done", "r.url")
        #expect(status.attempts >= 2)
        #expect(server.completedRequests().first?.status == 503)
        #expect(!fixture.destinationNames().contains { $0.hasPrefix(".") })
    }

    @Test("mirrors are tried in order: a dead first mirror falls through to the second")
    func mirrorsInOrder() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(50_000, seed: 9)
        server.serve("/m.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.drop("m.url", "\(server.url("/gone.bin"))\t\(server.url("/m.bin"))\n  out=m.bin\n")

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.downloaded("m.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.completedRequests().map(\.path) == ["/gone.bin", "/m.bin"])
    }

    @Test("checksum= is verified: a match is done, a mismatch fails with checksum_mismatch and no file (its data kept hidden)")
    func checksums() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(70_000, seed: 10)
        server.serve("/c.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "on_conflict: rename\n")
        let good = TestHTTPServer.sha256Hex(body)
        let bad = String(repeating: "0", count: 64)
        try fixture.drop("good.url", "\(server.url("/c.bin"))\n  checksum=sha-256=\(good.uppercased())\n  out=good.bin\n")
        try fixture.drop("bad.url", "\(server.url("/c.bin"))\n  checksum=sha-256=\(bad)\n  out=bad.bin\n")
        try fixture.drop("md5.url", "\(server.url("/c.bin"))\n  checksum=md5=\(String(repeating: "a", count: 32))\n  out=md5.bin\n")

        #expect(try fixture.runOnce() == 1)

        #expect(fixture.jobs(in: "done") == ["good.url"])
        #expect(fixture.jobs(in: "failed") == ["bad.url", "md5.url"])
        #expect(try fixture.status("failed", "bad.url").error?.kind == .checksumMismatch)
        #expect(try fixture.status("failed", "md5.url").error?.kind == .checksumMismatch)
        #expect(fixture.destinationNames() == [".bad.bin.bad", ".md5.bin.bad", "good.bin"])
    }

    @Test("on_conflict rename keeps the existing file and a repeated job name is filed as x.1.url")
    func conflictsNeverOverwrite() throws {
        let server = try TestHTTPServer()
        let first = TestHTTPServer.randomBytes(1_000, seed: 11)
        server.serve("/same.bin", body: first)
        let fixture = try SpoolFixture()
        try fixture.drop("same.url", server.url("/same.bin") + "\n")
        #expect(try fixture.runOnce() == 0)
        try fixture.drop("same.url", server.url("/same.bin") + "\n")
        #expect(try fixture.runOnce() == 0)

        #expect(fixture.jobs(in: "done") == ["same.1.url", "same.url"])
        #expect(fixture.names(in: "done").contains("same.1.status.json"))
        #expect(fixture.destinationNames() == ["same.1.bin", "same.bin"])
        let second = try fixture.status("done", "same.1.url")
        #expect(second.job == "same.url")
        #expect(second.downloads.first?.file == fixture.destination + "/same.1.bin")
    }

    @Test("credentials in URLs never reach status files or logs")
    func credentialsRedacted() throws {
        let server = try TestHTTPServer()
        server.serve("/private.bin", body: TestHTTPServer.randomBytes(2_000, seed: 12))
        let fixture = try SpoolFixture()
        let url = server.url("/private.bin").replacingOccurrences(of: "http://", with: "http://alice:secret@")
        try fixture.drop("private.url", url + "\n")
        try fixture.drop("private404.url", url.replacingOccurrences(of: "private.bin", with: "nothing") + "\n")

        #expect(try fixture.runOnce() == 1)

        #expect(fixture.jobs(in: "done") == ["private.url"])
        #expect(server.completedRequests().first?.header("Authorization") != nil)
        #expect(!fixture.log.contains("secret"))
        for folder in ["done", "failed"] {
            for name in fixture.names(in: folder) where name.hasSuffix(".json") {
                let text = try String(contentsOfFile: fixture.spool + "/" + folder + "/" + name, encoding: .utf8)
                #expect(!text.contains("secret"), "\(name) leaks the password")
                #expect(text.contains("***"))
            }
        }
    }

    /// With `fsync: false` claims and finishes run on the loop, not on workers (issue 34): the same
    /// jobs end the same way. Many small jobs, a job of two downloads, a retried one, a 404, an
    /// invalid file and two jobs that want one name, at `total: 4`.
    @Test("fsync: false: many small jobs, multi-download, retried, failed and invalid ones, each filed once as with workers")
    func smallJobsWithoutFsync() throws {
        let server = try TestHTTPServer()
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<40 {
            bodies["s\(index)"] = TestHTTPServer.randomBytes(3_000 + index, seed: 200 + UInt64(index))
            server.serve("/s/s\(index).bin", body: bodies["s\(index)"]!)
        }
        server.setFaults("/s/s7.bin", [.times(1, .status(code: 503))])
        server.setFaults("/s/missing.bin", [.status(code: 404)])
        let fixture = try SpoolFixture(extraConfig: "fsync: false\nconcurrency: { total: 4, per_host: 4 }\n")
        for index in 0..<40 { try fixture.drop("s\(index).url", server.url("/s/s\(index).bin") + "\n") }
        try fixture.drop("pair.url", server.url("/s/s1.bin") + "\n  out=p1.bin\n" + server.url("/s/s2.bin") + "\n  out=p2.bin\n")
        try fixture.drop("same.url", server.url("/s/s3.bin") + "\n  out=s3.bin\n")
        try fixture.drop("missing.url", server.url("/s/missing.bin") + "\n")
        try fixture.drop("invalid.url", "not a url\n")

        #expect(try fixture.runOnce() == 1)

        #expect(fixture.jobs(in: "done").count == 42)
        #expect(fixture.jobs(in: "failed") == ["invalid.url", "missing.url"])
        #expect(fixture.jobs(in: "inbox").isEmpty)
        for index in 0..<40 {
            #expect(fixture.downloaded("s\(index).bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(bodies["s\(index)"]!))
            #expect(try fixture.status("done", "s\(index).url").state == .done)
        }
        #expect(try fixture.status("done", "s7.url").attempts == 2)
        // Two jobs wanted s3.bin: one has it, the other the next free name (on_conflict: rename).
        #expect(fixture.downloaded("s3.1.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(bodies["s3"]!))
        let pair = try fixture.status("done", "pair.url")
        #expect(pair.downloads.map(\.state) == [.done, .done])
        #expect(fixture.downloaded("p1.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(bodies["s1"]!))
        #expect(fixture.downloaded("p2.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(bodies["s2"]!))
        #expect(try fixture.status("failed", "missing.url").error?.kind == .httpStatus)
        #expect(try fixture.status("failed", "invalid.url").error?.kind == .invalidJob)
        #expect(try fixture.status("failed", "missing.url").downloads.first?.connections == 1)
        #expect(fixture.destinationNames().count == 43, "\(fixture.destinationNames())")
        #expect(!fixture.destinationNames().contains { $0.hasPrefix(".") }, "partial data left: \(fixture.destinationNames())")
    }

    /// With `fsync: false` the finish path runs on the loop: an end's handler that asks for
    /// another end (a part not published, so the job is filed as failed) is carried out before
    /// `run --once` may end.
    @Test("fsync: false, on_conflict: fail, the name taken during the transfer: filed in failed/ in the same run, exit 1, the other file kept")
    func inlineFinishFilesARefusedPublication() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(400_000, seed: 3408)
        server.serve("/x/taken.bin", body: body, faults: [.drip(bytesPerChunk: 32 << 10, interval: .milliseconds(40))])
        let fixture = try SpoolFixture(extraConfig: "fsync: false\non_conflict: fail\n")
        try fixture.drop("taken.url", server.url("/x/taken.bin") + "\n")
        let agent = try AgentProcess(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture)
        try agent.start()
        #expect(try waitUntil { (fixture.fileSize(fixture.destination + "/.taken.bin.part") ?? 0) > 0 }, "\(fixture.log)")
        try "someone else's".write(toFile: fixture.destination + "/taken.bin", atomically: false, encoding: .utf8)
        #expect(try agent.wait(timeout: .seconds(60)) == .exited(1), "\(fixture.log)")
        #expect(fixture.jobs(in: "failed") == ["taken.url"])
        #expect(fixture.names(in: "work/test-agent").filter { $0 != ".lock" && $0 != ".lease" }.isEmpty)
        #expect(try fixture.status("failed", "taken.url").error?.kind == .exists)
        #expect(try String(contentsOfFile: fixture.destination + "/taken.bin", encoding: .utf8) == "someone else's")
    }
}
