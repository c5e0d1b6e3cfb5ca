import Foundation
import Glibc
import Testing

/// docs/config.md "Schedules and quotas" across a restart, midnight and a quota's reset, with the
/// real binary under a fake wall clock (see `ScheduleTests`). 8 November 2027 is a Monday; Berlin
/// is then UTC+1.
@Suite("Schedules and quotas across restarts and midnight, end to end")
struct ScheduleRestartTests {
    private let meter = ScheduleTests()

    /// The `rate_limit` of the job's first download in its state file.
    private func rateLimit(_ fixture: SpoolFixture, _ job: String) -> Int? {
        ((fixture.stateJSON(job)?["downloads"] as? [[String: Any]])?.first?["rate_limit"] as? NSNumber)?.intValue
    }

    @Test("killed and restarted inside a rate window, the agent runs at the window's rate, not the config's")
    func restartInsideRateWindow() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(4_000_000, seed: 276)
        server.serve("/r.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.writeConfig("limits: { rate_limit: 400K }\nschedule: [{ days: daily, time: \"10:00-12:00\", rate_limit: 100K }]\n")
        try fixture.drop("r.url", server.url("/r.bin") + "\n")
        let agent = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-08 10:30:00")
        #expect(try waitUntil(timeout: .seconds(5)) { meter.size(fixture, "r.bin") > 0 }, "\(fixture.log)")
        agent.kill()
        let again = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-08 10:30:10")
        #expect(try waitUntil(timeout: .seconds(5)) { server.requests(to: "/r.bin").count >= 2 }, "\(fixture.log)")
        Thread.sleep(forTimeInterval: 1)
        let inside = meter.rate(fixture, "r.bin", over: .seconds(3))
        let limit = rateLimit(fixture, "r.url")
        try again.stop()
        #expect((50_000...150_000).contains(inside), "after the restart: \(inside) B/s")
        #expect(limit == 102_400, "state file rate_limit \(String(describing: limit))")
        #expect(fixture.destinationNames().allSatisfy { $0 != "r.bin" }, "finished early: the config's rate was in force")
    }

    @Test("a pause window entered before a restart keeps the download waiting after it (reason schedule, retry_at the window's end); at the end it resumes, file whole")
    func pauseWindowSurvivesRestart() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_500_000, seed: 277)
        server.serve("/p.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.writeConfig("limits: { rate_limit: 150K }\nschedule: [{ days: daily, time: \"10:00-12:00\", pause: true }]\n")
        try fixture.drop("p.url", server.url("/p.bin") + "\n")
        let agent = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-08 09:59:56")
        #expect(try waitUntil(timeout: .seconds(8)) { fixture.log.contains("schedule window change") }, "\(fixture.log)")
        Thread.sleep(forTimeInterval: 0.5)
        let paused = meter.size(fixture, "p.bin")
        #expect(paused > 0 && paused < body.count, "\(paused)")
        try agent.stop()
        let requests = server.requests(to: "/p.bin").count
        let again = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-08 10:30:00")
        #expect(try waitUntil(timeout: .seconds(5)) { fixture.stateJSON("p.url")?["reason"] as? String == "schedule" }, "\(fixture.log)")
        let waiting = fixture.stateJSON("p.url")
        #expect(waiting?["state"] as? String == "waiting")
        #expect(waiting?["retry_at"] as? String == "2027-11-08T11:00:00Z")
        #expect(meter.rate(fixture, "p.bin", over: .milliseconds(1500)) == 0, "growing inside the pause after the restart")
        #expect(server.requests(to: "/p.bin").count == requests, "fetched inside the pause after the restart")
        try again.stop()
        // Restarted just before the window's end, the download waits for it and then finishes.
        let last = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-08 11:59:57")
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done").contains("p.url") }, "\(fixture.log)")
        try last.stop()
        #expect(fixture.downloaded("p.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    private func changes(_ fixture: SpoolFixture) -> Int {
        fixture.log.components(separatedBy: "schedule window change").count - 1
    }

    @Test("a 22:00-06:00 window holds its rate before midnight, after it (the clock crosses it) and until 06:00, then ends")
    func windowAcrossMidnight() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(5_000_000, seed: 278)
        server.serve("/m.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.writeConfig("limits: { rate_limit: 400K }\nschedule: [{ days: daily, time: \"22:00-06:00\", rate_limit: 100K }]\n")
        try fixture.drop("m.url", server.url("/m.bin") + "\n")
        let started = ContinuousClock.now
        let agent = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-08 23:59:55")
        #expect(try waitUntil(timeout: .seconds(3)) { meter.size(fixture, "m.bin") > 0 }, "\(fixture.log)")
        let beforeMidnight = meter.rate(fixture, "m.bin", over: .seconds(2))
        // The fake clock runs at real speed: 7 s after the start it is past 00:00.
        let elapsed = ContinuousClock.now - started
        if elapsed < .seconds(7) { Thread.sleep(forTimeInterval: Double((Duration.seconds(7) - elapsed).components.seconds) + 1) }
        let afterMidnight = meter.rate(fixture, "m.bin", over: .seconds(3))
        let limit = rateLimit(fixture, "m.url")
        try agent.stop()
        #expect((50_000...150_000).contains(beforeMidnight), "23:59:5x: \(beforeMidnight) B/s")
        #expect((50_000...150_000).contains(afterMidnight), "00:00:0x: \(afterMidnight) B/s")
        #expect(limit == 102_400, "state file rate_limit after midnight \(String(describing: limit))")
        // The start logs the window it finds in force; midnight is no change.
        #expect(changes(fixture) == 1, "the window changed at midnight: \(fixture.log)")
        let again = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-09 05:59:55")
        #expect(try waitUntil(timeout: .seconds(5)) { server.requests(to: "/m.bin").count >= 2 }, "\(fixture.log)")
        let beforeEnd = meter.rate(fixture, "m.bin", over: .seconds(2))
        #expect(try waitUntil(timeout: .seconds(6)) { changes(fixture) == 3 }, "\(fixture.log)")
        Thread.sleep(forTimeInterval: 1)
        let afterEnd = meter.rate(fixture, "m.bin", over: .seconds(3))
        try again.stop()
        #expect((50_000...150_000).contains(beforeEnd), "05:59:5x: \(beforeEnd) B/s")
        #expect((250_000...520_000).contains(afterEnd), "06:00:0x: \(afterEnd) B/s")
        let line = fixture.log.split(separator: "\n").last { $0.contains("schedule window change") }.map(String.init) ?? ""
        #expect(line.contains("windows=none") && line.contains("2027-11-09T22:00:00+01:00"), "\(line)")
    }

    @Test("a daily quota with running: pause reached mid-file pauses the transfer on its connection; after midnight it resumes and the file is whole")
    func quotaPausesRunningTransferUntilMidnight() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(380_000, seed: 279)
        server.serve("/q.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.writeConfig("""
            concurrency: { total: 1, per_host: 1 }
            limits: { rate_limit: 100K }
            quota: [{ period: daily, bytes: 200K, running: pause }]

            """)
        // The rest after midnight (at most 380,000 - 204,800 bytes) fits in the new day's quota.
        try fixture.drop("q.url", server.url("/q.bin") + "\n")
        let agent = try ScheduleTests.startAgent(["run"], fixture, clock: "2027-11-08 23:59:49")
        #expect(try waitUntil(timeout: .seconds(6)) { fixture.log.contains("quota reached") }, "\(fixture.log)")
        Thread.sleep(forTimeInterval: 0.5)
        let paused = meter.size(fixture, "q.bin")
        #expect(meter.rate(fixture, "q.bin", over: .milliseconds(1500)) == 0, "still growing with the quota used up")
        #expect(paused >= 200 * 1024 && paused < body.count, "\(paused)")
        #expect(fixture.log.contains("running=pause"), "\(fixture.log)")
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done").contains("q.url") }, "\(fixture.log)")
        try agent.stop()
        #expect(fixture.downloaded("q.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.requests(to: "/q.bin").count == 1, "paused on the same connection, not fetched again")
        #expect(fixture.log.contains("quota available again"), "\(fixture.log)")
    }
}
