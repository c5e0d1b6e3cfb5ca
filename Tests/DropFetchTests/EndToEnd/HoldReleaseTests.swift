import Foundation
import Glibc
import Testing

/// docs/spool.md "Hold and release" and §3 `attempts` (issue 9, items 10 and 11): `hold` moves the
/// job file and its state file to hold/, its `.part` and resume record stay; `release` puts it
/// back where it came from with its arrival, attempts and partial data. A hold or a release never
/// costs an attempt.
@Suite("Hold and release keep attempts, partial data and the routing folder, end to end", .serialized)
struct HoldReleaseTests {
    @Test("hold mid-download twice, release each time: each resume asks for a Range where it stopped; attempts stay 2")
    func holdKeepsAttemptsAndData() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_500_000, seed: 9_960)
        // Attempt 1 gets a 503; attempt 2 and the first resume are dripped so that holds land mid-transfer.
        server.serve("/hold.bin", body: body, faults: [
            .times(1, .status(code: 503)), .times(3, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60))),
        ])
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 5, initial_delay: 200ms, max_delay: 500ms }")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("hold.url", server.url("/hold.bin") + "\n")
        let part = fixture.partPath("hold.bin")

        var kept: [Int] = []
        for round in 1...2 {
            let floor = (kept.last ?? 0) + 150_000
            #expect(try waitUntil { (fixture.fileSize(part) ?? 0) >= floor }, "round \(round)\n\(fixture.logTail())")
            #expect(try fixture.runCLI(["hold", "hold"], config: config) == 0)
            #expect(fixture.jobs(in: "hold") == ["hold.url"])
            #expect(try waitUntil { server.requests(to: "/hold.bin").allSatisfy(\.isFinished) })
            // The agent lets go of a held job: its state file goes with it to hold/, nothing stays in work/.
            #expect(try waitUntil(timeout: .seconds(5)) { fixture.names(in: "work/test-agent").filter { $0 != ".lock" && $0 != ".lease" }.isEmpty },
                    "work/: \(fixture.names(in: "work/test-agent"))")
            let held = fixture.jsonObject(at: "hold/hold.state.json")
            #expect(held != nil, "round \(round): hold/ has no state file: \(fixture.names(in: "hold"))")
            #expect(StatusFields.int(held?["attempts"]) == 2, "round \(round): \(held ?? [:])")
            let size = try #require(fixture.fileSize(part), "round \(round): the .part was not kept")
            #expect(size < body.count)
            #expect(Array(body.prefix(size)) == FileManager.default.contents(atPath: part).map(Array.init))
            kept.append(size)
            let before = server.requests(to: "/hold.bin").count
            #expect(try fixture.runCLI(["release", "hold"], config: config) == 0)
            #expect(try waitUntil { server.requests(to: "/hold.bin").count > before }, "\(fixture.logTail())")
            let resumed = server.requests(to: "/hold.bin")[before]
            let start = rangeStart(resumed.header("Range"))
            #expect(start.map { $0 > 0 && $0 <= size && $0 >= size - 256 * 1024 } == true,
                    "round \(round): kept \(size) bytes, the resume asked for Range \(resumed.header("Range") ?? "none")")
        }

        #expect(try waitUntil { fixture.jobs(in: "done") == ["hold.url"] }, "\(fixture.logTail())")
        #expect(try agent.stop() == .exited(0))
        expectDone(fixture, "hold.url", body: body)
        let status = fixture.statusObject("done", "hold.url")
        #expect(StatusFields.int(status?["attempts"]) == 2, "a 503, then one attempt held and released twice: \(status ?? [:])")
        #expect(server.completedRequests().map(\.status) == [503, 200, 206, 206])
        let resumedFrom = StatusFields.int(StatusFields.firstDownload(status)["resumed_from"]) ?? 0
        #expect(resumedFrom > 0 && resumedFrom <= Int64(kept.last ?? 0))
    }

    @Test("a job held while it waits for a retry keeps its attempts: released, it is done with attempts 2")
    func holdWhileWaiting() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(300_000, seed: 9_961)
        server.serve("/wait.bin", body: body, faults: [.times(1, .dropAfter(bytes: 120_000))])
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 5, initial_delay: 6s, max_delay: 6s }")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("wait.url", server.url("/wait.bin") + "\n")
        #expect(try waitUntil { fixture.stateJSON("wait.url")?["retry_at"] != nil && server.requests(to: "/wait.bin").count == 1 },
                "\(fixture.logTail())")

        #expect(try fixture.runCLI(["hold", "wait"], config: config) == 0)
        #expect(try waitUntil(timeout: .seconds(5)) { fixture.names(in: "work/test-agent").filter { $0 != ".lock" && $0 != ".lease" }.isEmpty })
        #expect(StatusFields.int(fixture.jsonObject(at: "hold/wait.state.json")?["attempts"]) == 1,
                "hold/: \(fixture.names(in: "hold"))")
        #expect(fixture.fileSize(fixture.partPath("wait.bin")) == 120_000)
        // Released, it runs again at once or when its retry comes due (3–6 s): either way soon.
        #expect(try fixture.runCLI(["release", "wait"], config: config) == 0)
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done") == ["wait.url"] }, "\(fixture.logTail())")
        #expect(try agent.stop() == .exited(0))
        expectDone(fixture, "wait.url", body: body)
        #expect(StatusFields.int(fixture.statusObject("done", "wait.url")?["attempts"]) == 2)
        #expect(server.completedRequests().dropFirst().first?.header("Range") == "bytes=120000-")
    }

    @Test("release puts a job back into its routing folder: held from inbox/urgent/, it is done in class urgent")
    func releaseKeepsTheRoutingFolder() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_200_000, seed: 9_962)
        server.serve("/route.bin", body: body, faults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))])
        let fixture = try SpoolFixture(extraConfig: """
            classes:
              - name: urgent
                match: { folder: urgent }
                priority: 100

            """)
        try fixture.startDaemon()
        try fixture.drop("route.url", server.url("/route.bin") + "\n", folder: "urgent")
        #expect(try waitUntil { (fixture.fileSize(fixture.partPath("route.bin")) ?? 0) >= 100_000 }, "\(fixture.logTail())")
        #expect(try fixture.runCLI(["hold", "route"]) == 0)
        #expect(try fixture.runCLI(["release", "route"]) == 0)
        #expect(try waitUntil { fixture.jobs(in: "done") == ["route.url"] }, "\(fixture.logTail())")
        try fixture.stopDaemon()
        expectDone(fixture, "route.url", body: body)
        let status = fixture.statusObject("done", "route.url")
        #expect(status?["class"] as? String == "urgent", "\(status ?? [:])")
        #expect(StatusFields.int(status?["priority"]) == 100)
    }

    @Test("kill -9 right after the claim of a routing-folder job: its folder is on disk (class urgent when resumed; hold and release put it back in inbox/urgent/)",
          arguments: [false, true])
    func claimKeepsTheRoutingFolder(holdAfterKill: Bool) throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(300_000, seed: 9_963)
        server.serve("/kept.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: """
            classes:
              - name: urgent
                match: { folder: urgent }
                priority: 100

            """)
        try fixture.drop("kept.url", server.url("/kept.bin") + "\n", folder: "urgent")
        let ending = try AgentProcess.run(["run", "--once"], config: fixture.configPath,
                                          environment: ["DROPFETCH_CRASH_AT": "claimed:1"], log: fixture.logPath, in: fixture)
        #expect(ending == .signalled(SIGKILL), "\(fixture.log)")
        #expect(fixture.jobs(in: "work/test-agent") == ["kept.url"])
        if holdAfterKill {
            #expect(try fixture.runCLI(["hold", "kept"]) == 0)
            #expect(fixture.jobs(in: "hold/urgent") == ["kept.url"], "\(fixture.log)")
            #expect(try fixture.runCLI(["release", "kept"]) == 0)
            #expect(fixture.jobs(in: "inbox/urgent") == ["kept.url"], "\(fixture.log)")
        }
        #expect(try AgentProcess.run(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture) == .exited(0))
        expectDone(fixture, "kept.url", body: body)
        let status = fixture.statusObject("done", "kept.url")
        #expect(status?["class"] as? String == "urgent", "\(status ?? [:])\n\(fixture.log)")
        #expect(StatusFields.int(status?["priority"]) == 100)
    }

    @Test("cancel of a job whose state has no download yet (killed right after its claim): the cancelled status lists its URL")
    func cancelAfterClaimListsTheDownload() throws {
        let server = try TestHTTPServer()
        server.serve("/gone.bin", body: TestHTTPServer.randomBytes(10_000, seed: 9_964))
        let fixture = try SpoolFixture()
        let url = server.url("/gone.bin")
        try fixture.drop("gone.url", url + "\n", folder: "routed")
        let ending = try AgentProcess.run(["run", "--once"], config: fixture.configPath,
                                          environment: ["DROPFETCH_CRASH_AT": "claimed:1"], log: fixture.logPath, in: fixture)
        #expect(ending == .signalled(SIGKILL), "\(fixture.log)")
        #expect(try fixture.runCLI(["cancel", "gone"]) == 0)
        #expect(fixture.jobs(in: "failed") == ["gone.url"])
        let status = fixture.statusObject("failed", "gone.url")
        let downloads = status?["downloads"] as? [[String: Any]] ?? []
        #expect(downloads.count == 1, "\(status ?? [:])")
        #expect(downloads.first?["url"] as? String == url)
        #expect(downloads.first?["state"] as? String == "cancelled")
        #expect(status?["state"] as? String == "cancelled")
    }

    @Test("cancel of a job held after its file was published and before it was filed: the status names the file, done, and the file stays whole")
    func cancelAfterPublishNamesTheFile() throws {
        let (_, body, fixture) = try Self.killedAfterPublishing("pub", seed: 9_965)
        let file = fixture.destination + "/pub.bin"
        #expect(FileManager.default.fileExists(atPath: file))
        #expect(try fixture.runCLI(["hold", "pub"]) == 0)
        #expect(try fixture.runCLI(["cancel", "pub"]) == 0)
        #expect(fixture.jobs(in: "failed") == ["pub.url"])
        let status = fixture.statusObject("failed", "pub.url")
        let download = (status?["downloads"] as? [[String: Any]])?.first
        #expect(status?["state"] as? String == "cancelled", "\(status ?? [:])")
        #expect(download?["state"] as? String == "done", "\(status ?? [:])")
        #expect(download?["file"] as? String == file)
        #expect(StatusFields.int(download?["bytes"]) == Int64(body.count))
        #expect(fixture.downloaded("pub.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("release of a job held after its file was published and before it was filed: done with that file, fetched once, no second copy")
    func releaseAfterPublishKeepsTheFile() throws {
        let (server, body, fixture) = try Self.killedAfterPublishing("kept", seed: 9_966)
        #expect(try fixture.runCLI(["hold", "kept"]) == 0)
        #expect(try fixture.runCLI(["release", "kept"]) == 0)
        #expect(try fixture.runCLI(["run", "--once"]) == 0, "\(fixture.logTail())")
        #expect(fixture.jobs(in: "done") == ["kept.url"])
        expectDone(fixture, "kept.url", body: body)
        let download = (fixture.statusObject("done", "kept.url")?["downloads"] as? [[String: Any]])?.first
        #expect(download?["file"] as? String == fixture.destination + "/kept.bin")
        #expect(server.requests(to: "/kept.bin").count == 1)
        #expect(!FileManager.default.fileExists(atPath: fixture.destination + "/kept.1.bin"))
    }

    /// Job `<name>.url` (one download, `<name>.bin`, 50,000 bytes) whose agent was killed right
    /// after it published the file, before it filed the job: the job is still in work/.
    private static func killedAfterPublishing(_ name: String, seed: UInt64) throws -> (TestHTTPServer, [UInt8], SpoolFixture) {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(50_000, seed: seed)
        server.serve("/\(name).bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.drop("\(name).url", server.url("/\(name).bin") + "\n")
        let ending = try AgentProcess.run(["run", "--once"], config: fixture.configPath,
                                          environment: ["DROPFETCH_CRASH_AT": "published:1"], log: fixture.logPath, in: fixture)
        #expect(ending == .signalled(SIGKILL), "\(fixture.log)")
        return (server, body, fixture)
    }
}
