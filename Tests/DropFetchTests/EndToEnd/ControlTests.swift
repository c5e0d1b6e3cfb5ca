import DropFetch
import Foundation
import Testing

/// hold / release / cancel / retry, from the CLI and by hand with `mv`, against a running daemon.
@Suite("Job control, end to end")
struct ControlTests {
    private func slowServer(_ path: String, seed: UInt64) throws -> (TestHTTPServer, [UInt8]) {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_200_000, seed: seed)
        server.serve(path, body: body, faults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))])
        return (server, body)
    }

    @Test("hold stops a running transfer and keeps its .part; release resumes it with Range")
    func holdAndReleaseFromCLI() throws {
        let (server, body) = try slowServer("/h.bin", seed: 50)
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("h.url", server.url("/h.bin") + "\n")
        let part = fixture.destination + "/.h.bin.part"
        #expect(try waitUntil { (fixture.fileSize(part) ?? 0) >= 200_000 }, "\(fixture.log)")
        // The state file, refreshed about once a second, shows the download running with a speed.
        #expect(try waitUntil {
            let state = fixture.spool + "/work/test-agent/h.state.json"
            guard let data = FileManager.default.contents(atPath: state), let record = StatusRecord.decode(Array(data))
            else { return false }
            return record.downloads.first?.bytesPerSecond != nil
        }, "\(fixture.log)")

        #expect(try fixture.runCLI(["hold", "h"]) == 0)
        #expect(fixture.jobs(in: "hold") == ["h.url"])
        #expect(fixture.jobs(in: "work/test-agent").isEmpty)
        // The agent hangs up on the server: the request ends unfinished.
        #expect(try waitUntil { server.requests.allSatisfy(\.isFinished) })
        let kept = try #require(fixture.fileSize(part))
        #expect(kept >= 200_000 && kept < body.count)
        // status --json: the held job and its download wait for a release; nothing runs (issue 36).
        let held = try #require((try fixture.statusReport()["held"] as? [[String: Any]])?.first)
        #expect(held["job"] as? String == "h.url")
        #expect(held["state"] as? String == "queued")
        let download = try #require((held["downloads"] as? [[String: Any]])?.first)
        #expect(download["state"] as? String == "queued", "a held download is not running: \(download)")
        #expect(download["bytes_per_second"] == nil && download["connections"] == nil, "\(download)")

        #expect(try fixture.runCLI(["release", "h.url"]) == 0)
        #expect(try waitUntil { fixture.jobs(in: "done") == ["h.url"] }, "\(fixture.log)")
        try fixture.stopDaemon()
        #expect(fixture.downloaded("h.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let last = try #require(server.completedRequests().last)
        #expect(last.status == 206)
        #expect((try fixture.status("done", "h.url").downloads.first?.resumedFrom ?? 0) >= 200_000)
    }

    @Test("the same by hand: mv out of work/ to hold/, then mv back into the inbox")
    func holdAndReleaseByMove() throws {
        let (server, body) = try slowServer("/m.bin", seed: 51)
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("m.url", server.url("/m.bin") + "\n")
        let part = fixture.destination + "/.m.bin.part"
        #expect(try waitUntil { (fixture.fileSize(part) ?? 0) >= 200_000 }, "\(fixture.log)")

        try FileManager.default.moveItem(atPath: fixture.spool + "/work/test-agent/m.url", toPath: fixture.spool + "/hold/m.url")
        #expect(try waitUntil { server.requests.allSatisfy(\.isFinished) })
        #expect(try waitUntil { !FileManager.default.fileExists(atPath: fixture.spool + "/work/test-agent/m.state.json") })
        #expect((fixture.fileSize(part) ?? 0) >= 200_000)

        try FileManager.default.moveItem(atPath: fixture.spool + "/hold/m.url", toPath: fixture.spool + "/inbox/m.url")
        #expect(try waitUntil { fixture.jobs(in: "done") == ["m.url"] }, "\(fixture.log)")
        try fixture.stopDaemon()
        #expect(fixture.downloaded("m.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.completedRequests().last?.status == 206)
    }

    @Test("cancel files a running job in failed/ as cancelled and removes its partial data")
    func cancelRunningJob() throws {
        let (server, _) = try slowServer("/c.bin", seed: 52)
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("c.url", server.url("/c.bin") + "\n")
        let part = fixture.destination + "/.c.bin.part"
        #expect(try waitUntil { (fixture.fileSize(part) ?? 0) >= 100_000 }, "\(fixture.log)")

        #expect(try fixture.runCLI(["cancel", "c"]) == 0)

        #expect(fixture.jobs(in: "failed") == ["c.url"])
        let status = try fixture.status("failed", "c.url")
        #expect(status.state == .cancelled)
        #expect(status.error?.kind == .cancelled)
        #expect(status.downloads.first?.state == .cancelled)
        #expect(try waitUntil { server.requests.allSatisfy(\.isFinished) })
        #expect(try waitUntil { !fixture.destinationNames().contains { $0.hasPrefix(".c.bin") } }, "\(fixture.destinationNames())")
        #expect(fixture.jobs(in: "work/test-agent").isEmpty)
        #expect(fixture.daemonIsRunning)
        try fixture.stopDaemon()
    }

    /// The old record is set aside before the job leaves failed/: a daemon that fails the job again
    /// at once files it under its own name, never as x.1.url beside a record about to go (issue 36).
    @Test("retry of a job a daemon fails again at once: failed/ holds x.url and x.status.json, each time")
    func retryRefailsUnderItsName() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("gone.url", server.url("/gone.bin") + "\n")
        for round in 1...4 {
            // Each round's failure is one more request; then failed/ holds the pair, never x.1.*.
            #expect(try waitUntil {
                server.requests(to: "/gone.bin").count >= round && fixture.names(in: "failed").count >= 2
            }, "round \(round): \(fixture.names(in: "failed"))\n\(fixture.log)")
            #expect(fixture.names(in: "failed") == ["gone.status.json", "gone.url"], "round \(round)")
            if round < 4 { #expect(try fixture.runCLI(["retry", "gone"]) == 0) }
        }
        try fixture.stopDaemon()
        #expect(fixture.names(in: "failed") == ["gone.status.json", "gone.url"])
    }

    @Test("retry moves a failed job back to the inbox; it is then done; unknown jobs exit 1")
    func retryFailedJob() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        try fixture.drop("late.url", server.url("/late.bin") + "\n")
        #expect(try fixture.runOnce() == 1)
        #expect(fixture.jobs(in: "failed") == ["late.url"])

        let body = TestHTTPServer.randomBytes(5_000, seed: 53)
        server.serve("/late.bin", body: body)
        #expect(try fixture.runCLI(["retry", "late"]) == 0)
        #expect(fixture.jobs(in: "inbox") == ["late.url"])
        #expect(fixture.names(in: "failed").isEmpty)
        #expect(try fixture.runOnce() == 0)
        #expect(fixture.jobs(in: "done") == ["late.url"])
        #expect(fixture.downloaded("late.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))

        #expect(try fixture.runCLI(["retry", "nosuch"]) == 1)
        #expect(try fixture.runCLI(["release", "late"]) == 1)
        #expect(try fixture.runCLI(["hold", "../etc/passwd"]) == 1)
    }

    @Test("status --json lists the inbox, the active download with its progress, held jobs and recent results")
    func statusJSON() throws {
        let (server, _) = try slowServer("/s.bin", seed: 54)
        server.serve("/quick.bin", body: TestHTTPServer.randomBytes(1_000, seed: 55))
        let fixture = try SpoolFixture()
        try fixture.drop("quick.url", server.url("/quick.bin") + "\n")
        #expect(try fixture.runOnce() == 0)
        try "http://127.0.0.1:1/x\n".write(toFile: fixture.spool + "/hold/parked.url", atomically: false, encoding: .utf8)
        try fixture.startDaemon()
        try fixture.drop("s.url", server.url("/s.bin") + "\n")
        #expect(try waitUntil {
            let state = fixture.spool + "/work/test-agent/s.state.json"
            guard let data = FileManager.default.contents(atPath: state), let record = StatusRecord.decode(Array(data))
            else { return false }
            return (record.downloads.first?.bytes ?? 0) > 0
        }, "\(fixture.log)")

        let output = fixture.root.path + "/status.json"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: SpoolFixture.binary)
        process.arguments = ["status", "--json", "--config", fixture.configPath]
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        try process.runSerially()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [String: Any])
        #expect(object["inbox"] as? Int == 0)
        let active = try #require(object["active"] as? [[String: Any]])
        #expect(active.first?["job"] as? String == "s.url")
        #expect(active.first?["state"] as? String == "running")
        let download = try #require((active.first?["downloads"] as? [[String: Any]])?.first)
        #expect((download["bytes"] as? Int ?? 0) > 0)
        #expect(download["size"] as? Int == 1_200_000)
        #expect((object["held"] as? [[String: Any]])?.first?["job"] as? String == "parked.url")
        #expect((object["recent"] as? [[String: Any]])?.first?["job"] as? String == "quick.url")
        try fixture.stopDaemon()
    }
}

@Suite("dropfetch add, end to end")
struct AddCommandTests {
    @Test("add writes a valid job atomically; the agent does it with the given priority and name")
    func addThenRun() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(4_000, seed: 80)
        server.serve("/a.bin", body: body)
        let fixture = try SpoolFixture()
        #expect(try fixture.runCLI(["add", server.url("/gone.bin"), server.url("/a.bin"), "--mirrors", "--priority", "5", "--out", "named.bin"]) == 0)
        #expect(fixture.jobs(in: "inbox").count == 1)
        #expect(fixture.names(in: "inbox").allSatisfy { !$0.hasPrefix(".") })
        #expect(try fixture.runCLI(["add", "http://x/\nhttp://evil/"]) == 2)
        #expect(try fixture.runCLI(["add", server.url("/a.bin"), "--out", "../escape"]) == 2)
        #expect(fixture.jobs(in: "inbox").count == 1)

        #expect(try fixture.runOnce() == 0)
        let name = try #require(fixture.jobs(in: "done").first)
        let status = try fixture.status("done", name)
        #expect(status.priority == 5)
        #expect(fixture.downloaded("named.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.completedRequests().map(\.path) == ["/gone.bin", "/a.bin"])
    }
}

@Suite("Retry by hand, end to end")
struct ManualRetryTests {
    @Test("mv failed/x.url inbox/ (status file left behind) and a crash after the claim: the job still runs")
    func handRetriedJobIsNotMistakenForAHalfFiledOne() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        try fixture.drop("again.url", server.url("/again.bin") + "\n")
        #expect(try fixture.runOnce() == 1)
        #expect(fixture.names(in: "failed") == ["again.status.json", "again.url"])

        let body = TestHTTPServer.randomBytes(6_000, seed: 81)
        server.serve("/again.bin", body: body)
        // A second later, so the old record's `finished` is before the new claim.
        let oldFinished = try fixture.status("failed", "again.url").finished ?? ""
        #expect(try waitUntil(timeout: .seconds(3)) { Timestamp.now() > oldFinished })
        try FileManager.default.moveItem(atPath: fixture.spool + "/failed/again.url", toPath: fixture.spool + "/inbox/again.url")
        let crash = try AgentProcess.run(["run", "--once"], config: fixture.configPath,
                                         environment: ["DROPFETCH_CRASH_AT": "claimed"], log: fixture.logPath, in: fixture)
        #expect(crash == .signalled(SIGKILL))
        #expect(fixture.jobs(in: "work/test-agent") == ["again.url"])

        #expect(try fixture.runOnce() == 0)
        #expect(fixture.jobs(in: "done") == ["again.url"])
        #expect(fixture.downloaded("again.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }
}
