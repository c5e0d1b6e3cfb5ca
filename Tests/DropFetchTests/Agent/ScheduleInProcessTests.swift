@testable import DropFetch
import Foundation
import Testing

/// docs/config.md "Schedules and quotas" with the agent run in this process on a clock the test
/// sets (issue 34): windows, their boundaries and quotas decided on the injected wall time, with no
/// process, no libfaketime and no sleep. Local time is this process's zone (`LocalCalendar` reads
/// only `TZ`, which tests running in parallel must not change), so each wall time is a local reading
/// turned into an instant by Foundation's calendar: the tests hold in any zone. The DST test runs
/// only in a zone with a spring-forward change (not under UTC, as in CI, where the end-to-end
/// `ScheduleTests.dstPauseAndReloadResume` covers DST in Europe/Berlin); `LocalTimeSuites` keeps
/// `ScheduleStateTests`, which sets `TZ`, from running beside it. `once_wait: 0s`: a run on a clock that stands still
/// ends once nothing can start, instead of waiting for a change that never comes. The windows are
/// `pause: new` where they need not be `pause: true`: a transfer started by mistake then finishes and
/// the test fails, where under `pause: true` it would be paused for good on a clock that stands still
/// (the time limit then names the test).
extension LocalTimeSuites {
@Suite("Schedules and quotas in process", .timeLimit(.minutes(1)))
struct ScheduleInProcessTests {
    /// One schedule and a wall time: whether a job may start then, and until when it is held.
    struct WindowCase: Sendable, CustomTestStringConvertible {
        /// The entries of `schedule: [...]`.
        var schedule: String
        /// Local time, `yyyy-MM-dd HH:mm:ss`.
        var at: String
        /// The local time the hold ends (`yyyy-MM-dd HH:mm:ss`); nil when the job runs.
        var heldUntil: String?

        var testDescription: String { "\(schedule) at \(at): " + (heldUntil.map { "held until \($0)" } ?? "runs") }
    }

    /// 15 January 2030 is a Tuesday.
    static let windowCases: [WindowCase] = [
        WindowCase(schedule: #"{ days: daily, time: "10:00-12:00", pause: new }"#, at: "2030-01-15 09:59:59", heldUntil: nil),
        WindowCase(schedule: #"{ days: daily, time: "10:00-12:00", pause: new }"#, at: "2030-01-15 10:00:00",
                   heldUntil: "2030-01-15 12:00:00"),
        WindowCase(schedule: #"{ days: daily, time: "10:00-12:00", pause: new }"#, at: "2030-01-15 11:59:59",
                   heldUntil: "2030-01-15 12:00:00"),
        WindowCase(schedule: #"{ days: daily, time: "10:00-12:00", pause: new }"#, at: "2030-01-15 12:00:00", heldUntil: nil),
        // Monday's 22:00-06:00 holds on Tuesday morning; Tuesday's begins on Tuesday evening.
        WindowCase(schedule: #"{ days: Mon, time: "22:00-06:00", pause: new }"#, at: "2030-01-15 00:30:00",
                   heldUntil: "2030-01-15 06:00:00"),
        WindowCase(schedule: #"{ days: Mon, time: "22:00-06:00", pause: new }"#, at: "2030-01-15 06:00:00", heldUntil: nil),
        WindowCase(schedule: #"{ days: Tue, time: "22:00-06:00", pause: new }"#, at: "2030-01-15 00:30:00", heldUntil: nil),
        WindowCase(schedule: #"{ days: Tue, time: "22:00-06:00", pause: new }"#, at: "2030-01-15 22:00:00",
                   heldUntil: "2030-01-16 06:00:00"),
        // A later window's `pause: false` lifts an earlier pause while it is in force.
        WindowCase(schedule: #"{ days: daily, time: "00:00-24:00", pause: new }, { days: daily, time: "10:00-12:00", pause: false }"#,
                   at: "2030-01-15 10:30:00", heldUntil: nil),
        WindowCase(schedule: #"{ days: daily, time: "00:00-24:00", pause: new }, { days: daily, time: "10:00-12:00", pause: false }"#,
                   at: "2030-01-15 09:59:59", heldUntil: "2030-01-15 10:00:00"),
    ]

    /// The instant (seconds since 1970) at which this process's local clock reads `text`
    /// (`yyyy-MM-dd HH:mm:ss`), by Foundation's calendar rather than the agent's `LocalCalendar`.
    static func local(_ text: String) -> Int64 {
        let format = DateFormatter()
        format.dateFormat = "yyyy-MM-dd HH:mm:ss"
        format.timeZone = .current
        format.locale = Locale(identifier: "en_US_POSIX")
        return Int64(format.date(from: text)!.timeIntervalSince1970)
    }

    /// `2030-01-15T12:00:00+01:00`: local time with its offset, as the log writes a hold's end.
    static func localText(_ seconds: Int64) -> String {
        let format = DateFormatter()
        format.dateFormat = "yyyy-MM-dd'T'HH:mm:ssxxx"
        format.timeZone = .current
        format.locale = Locale(identifier: "en_US_POSIX")
        return format.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// `2030-01-15T11:00:00Z`: UTC, as status and state files write times.
    static func utc(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// A clock standing at `wall` (seconds since 1970) until the test moves it.
    static func clock(at wall: Int64) -> AgentClock {
        AgentClock(monotonic: 7_000_000_000, wall: wall * 1_000_000_000)
    }

    /// `run --once` of a new agent on `clock` with the fixture's config; its exit status. The agent
    /// is gone when this returns, so that the next run takes its work folder's lock.
    static func runOnce(_ fixture: SpoolFixture, on clock: AgentClock, log: CapturedLog) throws -> Agent.ExitStatus {
        let agent = try Agent(config: try ConfigLoader.load(path: fixture.configPath), options: Agent.Options(once: true),
                              logger: log.logger(), clock: clock)
        return agent.run()
    }

    /// The lines saying why `run --once` left work waiting.
    static func waitingLines(_ log: CapturedLog) -> [String] {
        log.lines(containing: "jobs left waiting")
    }

    /// One job of one download run once at `wall` under `schedule`: held until `heldUntil` (exit 75,
    /// the job unclaimed in the inbox, no request, the log naming the schedule and the hold's end), or
    /// downloaded (exit 0, done/, the file's sha256, started at the clock's time).
    func expectWindow(schedule: String, wall: Int64, heldUntil: Int64?, seed: UInt64) throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(20_000, seed: seed)
        server.serve("/w.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "once_wait: 0s\nschedule: [\(schedule)]\n")
        try fixture.drop("w.url", server.url("/w.bin") + "\n")
        let log = CapturedLog()

        let status = try Self.runOnce(fixture, on: Self.clock(at: wall), log: log)

        if let heldUntil {
            #expect(status == .retriesPending, "\(log.text)")
            #expect(fixture.jobs(in: "inbox") == ["w.url"])
            #expect(fixture.jobs(in: "done").isEmpty && fixture.jobs(in: "work/test-agent").isEmpty)
            #expect(server.requests.isEmpty)
            #expect(Self.waitingLines(log) == ["jobs left waiting: held back by the schedule until \(Self.localText(heldUntil)) reason=schedule"],
                    "\(log.text)")
        } else {
            #expect(status == .success, "\(log.text)")
            #expect(fixture.jobs(in: "done") == ["w.url"] && fixture.jobs(in: "inbox").isEmpty)
            #expect(fixture.downloaded("w.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
            #expect(try fixture.status("done", "w.url").started == Self.utc(wall))
            #expect(server.requests(to: "/w.bin").count == 1)
            #expect(Self.waitingLines(log).isEmpty, "\(log.text)")
        }
    }

    @Test("run --once inside a pause: true window starts nothing: exit 75, the job unclaimed in the inbox, no request, the log names the schedule and the window's end; no quota/ folder")
    func onceInPauseWindow() throws {
        let server = try TestHTTPServer()
        server.serve("/p.bin", body: TestHTTPServer.randomBytes(10_000, seed: 340))
        let fixture = try SpoolFixture(extraConfig: "once_wait: 0s\nschedule: [{ days: daily, time: \"10:00-12:00\", pause: true }]\n")
        try fixture.drop("p.url", server.url("/p.bin") + "\n")
        let log = CapturedLog()

        #expect(try Self.runOnce(fixture, on: Self.clock(at: Self.local("2030-01-15 10:30:00")), log: log) == .retriesPending,
                "\(log.text)")

        #expect(fixture.jobs(in: "inbox") == ["p.url"])
        #expect(fixture.jobs(in: "done").isEmpty && fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.names(in: "work/test-agent").filter { !$0.hasPrefix(".") }.isEmpty, "claimed: \(fixture.names(in: "work/test-agent"))")
        #expect(server.requests.isEmpty)
        let end = Self.localText(Self.local("2030-01-15 12:00:00"))
        #expect(Self.waitingLines(log) == ["jobs left waiting: held back by the schedule until \(end) reason=schedule"], "\(log.text)")
        // Nothing in the spool root but the five folders: no quota/ without a quota.
        #expect(fixture.names(in: "") == ["done", "failed", "hold", "inbox", "work"])
    }

    @Test("a window is in force from its start to just before its end, on its days, across midnight; a later window's pause: false lifts a pause",
          arguments: windowCases)
    func windowBoundary(_ row: WindowCase) throws {
        try expectWindow(schedule: row.schedule, wall: Self.local(row.at), heldUntil: row.heldUntil.map(Self.local),
                         seed: UInt64(Self.local(row.at) % 1000))
    }

    /// The quota test's config: one transfer at a time, 200 KiB a day.
    static let dailyQuota = "once_wait: 0s\nconcurrency: { total: 1, per_host: 1 }\nquota: [{ period: daily, bytes: 200K }]\n"

    @Test("a daily quota used up by a job's first file holds its second (waiting, reason quota, retry_at local midnight); after a restart before midnight the ledger holds a new job in the inbox; at midnight both run")
    func dailyQuotaHoldsUntilMidnight() throws {
        let server = try TestHTTPServer()
        let first = TestHTTPServer.randomBytes(300_000, seed: 341)
        let second = TestHTTPServer.randomBytes(100_000, seed: 342)
        let later = TestHTTPServer.randomBytes(10_000, seed: 343)
        server.serve("/q1.bin", body: first)
        server.serve("/q2.bin", body: second)
        server.serve("/r.bin", body: later)
        let fixture = try SpoolFixture(extraConfig: Self.dailyQuota)
        // One job of two downloads: the second may not start once the first used the quota up.
        try fixture.drop("q.url", server.url("/q1.bin") + "\n" + server.url("/q2.bin") + "\n")
        let clock = Self.clock(at: Self.local("2030-06-10 23:59:58"))
        let midnight = Self.local("2030-06-11 00:00:00")
        let heldLine = "jobs left waiting: held back by the quota until \(Self.localText(midnight)) reason=quota"
        let ledger = { (try? String(contentsOfFile: fixture.spool + "/quota/test-agent", encoding: .utf8)) ?? "" }

        let firstRun = CapturedLog()
        #expect(try Self.runOnce(fixture, on: clock, log: firstRun) == .retriesPending, "\(firstRun.text)")
        #expect(fixture.downloaded("q1.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(first))
        #expect(fixture.downloaded("q2.bin") == nil)
        #expect(fixture.jobs(in: "work/test-agent") == ["q.url"])
        let waiting = fixture.stateJSON("q.url")
        #expect(waiting?["state"] as? String == "waiting", "\(String(describing: waiting))")
        #expect(waiting?["reason"] as? String == "quota")
        #expect(waiting?["retry_at"] as? String == Self.utc(midnight))
        #expect(server.requests(to: "/q1.bin").count == 1 && server.requests(to: "/q2.bin").isEmpty)
        #expect(!firstRun.lines(containing: "quota reached").isEmpty, "\(firstRun.text)")
        #expect(Self.waitingLines(firstRun) == [heldLine], "\(firstRun.text)")
        #expect(ledger().contains("daily 2030-06-10 default 300000\n"), "\(ledger())")

        // Restarted one second before midnight, the agent knows the quota is used up from the
        // ledger alone: a job dropped meanwhile stays unclaimed.
        try fixture.drop("r.url", server.url("/r.bin") + "\n")
        clock.advance(by: 1_000_000_000)
        let secondRun = CapturedLog()
        #expect(try Self.runOnce(fixture, on: clock, log: secondRun) == .retriesPending, "\(secondRun.text)")
        #expect(fixture.jobs(in: "inbox") == ["r.url"] && fixture.jobs(in: "work/test-agent") == ["q.url"])
        #expect(fixture.stateJSON("q.url")?["reason"] as? String == "quota")
        #expect(fixture.stateJSON("q.url")?["retry_at"] as? String == Self.utc(midnight))
        #expect(server.requests(to: "/q2.bin").isEmpty && server.requests(to: "/r.bin").isEmpty)
        #expect(Self.waitingLines(secondRun) == [heldLine], "\(secondRun.text)")

        // At midnight a new period begins: both run, the first file is not fetched again.
        clock.advance(by: 1_000_000_000)
        let thirdRun = CapturedLog()
        #expect(try Self.runOnce(fixture, on: clock, log: thirdRun) == .success, "\(thirdRun.text)")
        #expect(fixture.jobs(in: "done") == ["q.url", "r.url"] && fixture.jobs(in: "work/test-agent").isEmpty)
        #expect(fixture.downloaded("q2.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(second))
        #expect(fixture.downloaded("r.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(later))
        #expect(server.requests(to: "/q1.bin").count == 1 && server.requests(to: "/q2.bin").count == 1)
        let done = try fixture.status("done", "q.url")
        #expect(done.finished == Self.utc(midnight))
        #expect(done.downloads.map(\.sha256) == [TestHTTPServer.sha256Hex(first), TestHTTPServer.sha256Hex(second)])
        #expect(ledger().contains("daily 2030-06-10 default 300000\n") && ledger().contains("daily 2030-06-11 default 110000\n"),
                "\(ledger())")
    }

    @Test("a restart puts a held download in the quota state the clock and the config say, not the earlier run's: with the quota raised meanwhile it runs before midnight")
    func restartRecomputesAQuotaHold() throws {
        let server = try TestHTTPServer()
        let second = TestHTTPServer.randomBytes(100_000, seed: 348)
        server.serve("/q1.bin", body: TestHTTPServer.randomBytes(300_000, seed: 347))
        server.serve("/q2.bin", body: second)
        let fixture = try SpoolFixture(extraConfig: Self.dailyQuota)
        try fixture.drop("q.url", server.url("/q1.bin") + "\n" + server.url("/q2.bin") + "\n")
        let clock = Self.clock(at: Self.local("2030-06-10 23:00:00"))
        #expect(try Self.runOnce(fixture, on: clock, log: CapturedLog()) == .retriesPending)
        #expect(fixture.stateJSON("q.url")?["reason"] as? String == "quota")
        try fixture.writeConfig(Self.dailyQuota.replacingOccurrences(of: "200K", with: "10MB"))
        clock.advance(by: 1_000_000_000)
        let log = CapturedLog()

        let status = try Self.runOnce(fixture, on: clock, log: log)

        #expect(status == .success, "\(log.text)")
        #expect(fixture.jobs(in: "done") == ["q.url"])
        #expect(fixture.downloaded("q2.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(second))
    }

    @Test("a quota's use is today's count in this agent's ledger plus every known agent's: at the quota exactly, an inbox job stays unclaimed; an unknown agent's file and yesterday's count do not count",
          arguments: [true, false])
    func ledgerCountsHoldAnInboxJob(otherAgentKnown: Bool) throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(10_000, seed: 349)
        server.serve("/l.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "once_wait: 0s\nquota: [{ period: daily, bytes: 200K }]\n")
        try fixture.drop("l.url", server.url("/l.bin") + "\n")
        // 120,000 bytes of this agent today and 84,800 of agent-z make 204,800: the quota exactly.
        try FileManager.default.createDirectory(atPath: fixture.spool + "/quota", withIntermediateDirectories: true)
        try "daily 2030-06-10 default 120000\ndaily 2030-06-09 default 900000\n"
            .write(toFile: fixture.spool + "/quota/test-agent", atomically: true, encoding: .utf8)
        try "daily 2030-06-10 default 84800\n".write(toFile: fixture.spool + "/quota/agent-z", atomically: true, encoding: .utf8)
        if otherAgentKnown {
            try FileManager.default.createDirectory(atPath: fixture.spool + "/work/agent-z", withIntermediateDirectories: true)
        }
        let log = CapturedLog()

        let status = try Self.runOnce(fixture, on: Self.clock(at: Self.local("2030-06-10 12:00:00")), log: log)

        if otherAgentKnown {
            #expect(status == .retriesPending, "\(log.text)")
            #expect(fixture.jobs(in: "inbox") == ["l.url"] && fixture.jobs(in: "work/test-agent").isEmpty)
            #expect(server.requests.isEmpty)
            let midnight = Self.localText(Self.local("2030-06-11 00:00:00"))
            #expect(Self.waitingLines(log) == ["jobs left waiting: held back by the quota until \(midnight) reason=quota"], "\(log.text)")
        } else {
            #expect(status == .success, "\(log.text)")
            #expect(fixture.jobs(in: "done") == ["l.url"])
            #expect(fixture.downloaded("l.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
            // The bytes are counted on the clock's day.
            let ledger = try String(contentsOfFile: fixture.spool + "/quota/test-agent", encoding: .utf8)
            #expect(ledger.contains("daily 2030-06-10 default 130000\n"), "\(ledger)")
        }
    }

    /// A change of the process's zone in 2030 where the clocks jump ahead within one day.
    struct SpringForward: Sendable {
        /// The first instant after the jump (seconds since 1970).
        var instant: Int64
        /// The local minute after midnight the clocks jump from (120 for 02:00).
        var from: Int
        /// Minutes skipped.
        var gap: Int
        /// The day's name as `days:` writes it.
        var day: String

        /// `HH:MM` of a minute after midnight.
        static func clockText(_ minute: Int) -> String {
            String(format: "%02d:%02d", minute / 60, minute % 60)
        }

        /// The first spring-forward change of 2030 in this process's zone; nil in a zone without one
    /// (UTC), or where the skipped span and the windows around it would cross midnight.
        static let inLocalZone: SpringForward? = {
            let zone = TimeZone.current
            var after = Date(timeIntervalSince1970: TimeInterval(ScheduleInProcessTests.local("2030-01-01 00:00:00")))
            for _ in 0..<4 {
                guard let change = zone.nextDaylightSavingTimeTransition(after: after) else { return nil }
                after = change
                let gap = (zone.secondsFromGMT(for: change) - zone.secondsFromGMT(for: change.addingTimeInterval(-1))) / 60
                guard gap > 0 else { continue }
                let instant = Int64(change.timeIntervalSince1970)
                let parts = Calendar.current.dateComponents(in: zone, from: change.addingTimeInterval(-1))
                let from = parts.hour! * 60 + parts.minute! + 1
                // Windows from the skipped span's middle to half a gap after it: within the day.
                guard from + gap * 2 < 1440 else { return nil }
                return SpringForward(instant: instant, from: from, gap: gap,
                                     day: ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][parts.weekday! - 1])
            }
            return nil
        }()
    }

    @Test("on a spring-forward day a window starting in the skipped span starts when the clocks jump; one wholly inside it does not happen (the process's zone)",
          .enabled(if: SpringForward.inLocalZone != nil, "the process's zone has no spring-forward change within one day in 2030"))
    func springForwardWindow() throws {
        let change = try #require(SpringForward.inLocalZone)
        // Berlin: 02:30-03:30 on 31 March 2030, in force from 03:00 CEST (the jump) to 03:30 CEST.
        let straddling = "{ days: \(change.day), time: \"\(SpringForward.clockText(change.from + change.gap / 2))-"
            + "\(SpringForward.clockText(change.from + change.gap + change.gap / 2))\", pause: new }"
        try expectWindow(schedule: straddling, wall: change.instant - 1, heldUntil: nil, seed: 344)
        try expectWindow(schedule: straddling, wall: change.instant, heldUntil: change.instant + Int64(change.gap / 2) * 60, seed: 345)
        // Berlin: 02:15-02:45, which the clocks skip.
        let skipped = "{ days: \(change.day), time: \"\(SpringForward.clockText(change.from + change.gap / 4))-"
            + "\(SpringForward.clockText(change.from + change.gap * 3 / 4))\", pause: new }"
        try expectWindow(schedule: skipped, wall: change.instant, heldUntil: nil, seed: 346)
    }
}
}
