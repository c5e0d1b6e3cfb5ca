import Foundation
import Glibc
import Testing

/// docs/config.md "Schedules and quotas" with the real binary. The agent runs under a fake wall
/// clock (libfaketime, LD_PRELOAD for the agent only; FAKETIME="@…" starts its clock there and
/// lets it run at real speed) in TZ=Europe/Berlin. Fake times are in 2027, after the real date,
/// so that the jobs' mtimes are in the agent's past. What needs no real process or running clock
/// (a window's bounds, a quota's hold and reset, `run --once` in a pause) is `ScheduleInProcessTests`.
@Suite("Schedules and quotas, end to end")
struct ScheduleTests {
    static let libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

    /// The agent's environment: its clock starts at `start` (Berlin local time).
    static func fakeClock(_ start: String) -> [String: String] {
        ["LD_PRELOAD": libfaketime, "FAKETIME": "@" + start, "TZ": "Europe/Berlin", "FAKETIME_NO_CACHE": "1"]
    }

    /// `dropfetch ARGS` started under the fake clock. It is exec'd by a shell (`heldAtStart`):
    /// spawned straight from the test process with libfaketime preloaded, the binary saw no arguments.
    static func startAgent(_ arguments: [String], _ fixture: SpoolFixture, clock: String, config: String? = nil) throws -> AgentProcess {
        let agent = try AgentProcess(arguments, config: config ?? fixture.configPath, environment: fakeClock(clock),
                                     log: fixture.logPath, in: fixture, heldAtStart: true)
        try agent.start()
        try agent.release()
        return agent
    }

    /// Bytes in the download's `.part` or final file.
    func size(_ fixture: SpoolFixture, _ file: String) -> Int {
        fixture.fileSize(fixture.partPath(file)) ?? fixture.fileSize(fixture.destination + "/" + file) ?? 0
    }

    /// The bytes per second of a growing file over `span`, sampled on the test's clock.
    func rate(_ fixture: SpoolFixture, _ file: String, over span: Duration) -> Double {
        let before = size(fixture, file)
        let start = ContinuousClock.now
        Thread.sleep(forTimeInterval: Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18)
        let (whole, fraction) = (ContinuousClock.now - start).components
        return Double(size(fixture, file) - before) / (Double(whole) + Double(fraction) / 1e18)
    }

    @Test("a daily quota reached mid-file lets the file finish, holds the next job (waiting, reason quota, retry_at midnight) and counts across restarts; after midnight it runs")
    func dailyQuotaReachedAndReset() throws {
        let server = try TestHTTPServer()
        let first = TestHTTPServer.randomBytes(300_000, seed: 271)
        let second = TestHTTPServer.randomBytes(100_000, seed: 272)
        server.serve("/q1.bin", body: first)
        server.serve("/q2.bin", body: second)
        let fixture = try SpoolFixture(extraConfig: """
            concurrency: { total: 1, per_host: 1 }
            limits: { rate_limit: 150K }
            quota: [{ period: daily, bytes: 200K }]

            """)
        // One job of two downloads: the second is held once the first used the quota up.
        try fixture.drop("q.url", server.url("/q1.bin") + "\n" + server.url("/q2.bin") + "\n")
        let agent = try Self.startAgent(["run"], fixture, clock: "2027-06-10 23:59:48")
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.stateJSON("q.url")?["reason"] as? String == "quota" }, "\(fixture.log)")
        let waiting = fixture.stateJSON("q.url")
        #expect(waiting?["state"] as? String == "waiting")
        #expect(waiting?["retry_at"] as? String == "2027-06-10T22:00:00Z")
        #expect(fixture.downloaded("q1.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(first))
        #expect(fixture.log.contains("quota reached"), "\(fixture.log)")
        #expect(server.requests(to: "/q2.bin").isEmpty)
        // Restarted before midnight, the agent still knows the quota is used up.
        try agent.stop()
        let ledger = try String(contentsOfFile: fixture.spool + "/quota/test-agent", encoding: .utf8)
        #expect(ledger.contains("daily 2027-06-10 default 300000"), "\(ledger)")
        let again = try Self.startAgent(["run"], fixture, clock: "2027-06-10 23:59:56")
        #expect(try waitUntil(timeout: .seconds(3)) { fixture.log.components(separatedBy: "quota reached").count >= 3 }, "\(fixture.log)")
        #expect(fixture.stateJSON("q.url")?["state"] as? String == "waiting")
        #expect(fixture.stateJSON("q.url")?["retry_at"] as? String == "2027-06-10T22:00:00Z")
        #expect(server.requests(to: "/q2.bin").isEmpty)
        #expect(try waitUntil(timeout: .seconds(12)) { fixture.jobs(in: "done").contains("q.url") }, "\(fixture.log)")
        try again.stop()
        #expect(fixture.downloaded("q2.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(second))
        #expect(fixture.log.contains("quota available again"), "\(fixture.log)")
    }

    @Test("at a window's start the rate changes within a second (measured at the file), and back at its end")
    func windowBoundaryChangesTheRate() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(3_000_000, seed: 273)
        server.serve("/w.bin", body: body)
        let fixture = try SpoolFixture()
        // 8 November 2027 is a Monday.
        try fixture.writeConfig("limits: { rate_limit: 400K }\nschedule: [{ days: Mon-Fri, time: \"08:00-09:00\", rate_limit: 100K }]\n")
        try fixture.drop("w.url", server.url("/w.bin") + "\n")
        let agent = try Self.startAgent(["run"], fixture, clock: "2027-11-08 07:59:56")
        #expect(try waitUntil(timeout: .seconds(3)) { size(fixture, "w.bin") > 0 }, "\(fixture.log)")
        let before = rate(fixture, "w.bin", over: .seconds(2))
        #expect(try waitUntil(timeout: .seconds(4)) { fixture.log.contains("schedule window change") }, "\(fixture.log)")
        Thread.sleep(forTimeInterval: 1)
        let inside = rate(fixture, "w.bin", over: .seconds(3))
        try agent.stop()
        #expect((250_000...520_000).contains(before), "before 08:00: \(before) B/s")
        #expect((50_000...150_000).contains(inside), "after 08:00: \(inside) B/s")
        let line = fixture.log.split(separator: "\n").first { $0.contains("schedule window change") }.map(String.init) ?? ""
        #expect(line.contains("Mon-Fri 08:00-09:00") && line.contains("2027-11-08T09:00:00+01:00"), "\(line)")
    }

    @Test("on the DST day a 02:30 window starts at 03:00 CEST: the running download pauses; a reload without the window resumes it and the file is whole")
    func dstPauseAndReloadResume() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_500_000, seed: 274)
        server.serve("/d.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.writeConfig("limits: { rate_limit: 150K }\nschedule: [{ days: Sun, time: \"02:30-03:30\", pause: true }]\n")
        try fixture.drop("d.url", server.url("/d.bin") + "\n")
        // 28 March 2027 is a Sunday: at 02:00 CET the clocks go to 03:00 CEST.
        let agent = try Self.startAgent(["run"], fixture, clock: "2027-03-28 01:59:57")
        #expect(try waitUntil(timeout: .seconds(6)) { fixture.log.contains("schedule window change") }, "\(fixture.log)")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(rate(fixture, "d.bin", over: .milliseconds(1500)) == 0, "still growing inside the pause")
        let paused = size(fixture, "d.bin")
        #expect(paused > 0 && paused < body.count)
        let line = fixture.log.split(separator: "\n").first { $0.contains("schedule window change") }.map(String.init) ?? ""
        #expect(line.contains("ts=2027-03-28T01:00:0") && line.contains("pause=true"), "\(line)")
        try fixture.writeConfig("limits: { rate_limit: 500K }\n")
        #expect(try waitUntil(timeout: .seconds(15)) { fixture.jobs(in: "done").contains("d.url") }, "\(fixture.log)")
        try agent.stop()
        #expect(fixture.downloaded("d.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.requests(to: "/d.bin").count == 1, "paused on the same connection, not fetched again")
    }

    @Test("two agents on one spool share one daily quota: together they stop once it is used, not each")
    func twoAgentsShareAQuota() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(300_000, seed: 275)
        server.serve("/s.bin", body: body)
        let fixture = try SpoolFixture()
        let shared = "concurrency: { total: 1, per_host: 1 }\nlimits: { rate_limit: 200K }\nonce_wait: 1s\nquota: [{ period: daily, bytes: 1MB }]\n"
        let configA = try fixture.writeFullConfig("a.yaml", agentID: "agent-a", shared)
        let configB = try fixture.writeFullConfig("b.yaml", agentID: "agent-b", shared)
        for index in 1...6 { try fixture.drop("s\(index).url", server.url("/s.bin?\(index)") + "\n  out=s\(index).bin\n") }
        let agentA = try AgentProcess(["run", "--once"], config: configA, log: fixture.logPath, in: fixture, heldAtStart: true)
        let agentB = try AgentProcess(["run", "--once"], config: configB, log: fixture.logPath, in: fixture, heldAtStart: true)
        try agentA.start()
        try agentB.start()
        try agentA.release()
        try agentB.release()
        #expect(try agentA.wait(timeout: .seconds(30)) == .exited(75), "\(fixture.log)")
        #expect(try agentB.wait(timeout: .seconds(30)) == .exited(75), "\(fixture.log)")
        let done = fixture.jobs(in: "done")
        // Each alone would fetch four files (1.2 MB ≥ 1 MB) and so all six; together they stop at
        // four, or five when both started their last one at once.
        #expect((4...5).contains(done.count), "done: \(done)")
        #expect(Set(fixture.names(in: "quota")) == ["agent-a", "agent-b"])
        #expect(fixture.log.contains("quota reached"), "\(fixture.log)")
        for job in done { #expect(try fixture.status("done", job).downloads[0].bytes == Int64(body.count)) }
    }

    @Test("an agent whose transfer ends reads the other agents' ledger before it starts the next: a ledger written during the transfer holds the next back")
    func nextStartReadsTheLedger() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(300_000, seed: 276)
        // Two halves 300 ms apart: the transfer ends before the agent's once-a-second exchange.
        server.serve("/q.bin", body: body, faults: [.drip(bytesPerChunk: 150_000, interval: .milliseconds(300))])
        let fixture = try SpoolFixture()
        try fixture.writeConfig("concurrency: { total: 1 }\nonce_wait: 1s\nquota: [{ period: daily, bytes: 1MB }]\n")
        for index in 1...2 { try fixture.drop("q\(index).url", server.url("/q.bin?\(index)") + "\n  out=q\(index).bin\n") }
        let agent = try AgentProcess(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture, heldAtStart: true)
        try agent.start()
        try agent.release()
        #expect(try waitUntil { ["q1.bin", "q2.bin"].contains { (fixture.fileSize(fixture.partPath($0)) ?? 0) >= 150_000 } },
                "\(fixture.log)")
        // Another agent's count of today: 800,000 bytes, and this one's 300,000 make more than 1 MiB.
        // It has a work folder: only known agents' ledgers count (issue 35).
        try FileManager.default.createDirectory(atPath: fixture.spool + "/work/agent-z", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: fixture.spool + "/quota", withIntermediateDirectories: true)
        try "daily \(ScheduleStatusTests.today()) default 800000\n"
            .write(toFile: fixture.spool + "/quota/agent-z", atomically: true, encoding: .utf8)
        #expect(try agent.wait(timeout: .seconds(30)) == .exited(75), "\(fixture.log)")
        #expect(fixture.jobs(in: "done").count == 1, "\(fixture.log)")
        #expect(server.requests.count == 1, "the second transfer started: \(fixture.log)")
        #expect(fixture.log.contains("quota reached"), "\(fixture.log)")
    }
}
