import Foundation
import Testing

/// `status`, `status --json`, `status --html` and the metrics file show the schedule window in force,
/// the next change and each quota's use (docs/cli.md, docs/config.md "Schedules and quotas"), read
/// from the config, the wall clock and every agent's ledger file in `<spool>/quota`, with no agent running.
@Suite("Schedule and quota status")
struct ScheduleStatusTests {
    /// A window on every day all day (in force now), and one on the day after tomorrow only (not in force).
    static func config(quota: Bool) -> String {
        let later = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][(Calendar.current.component(.weekday, from: Date()) + 1) % 7]
        return """
            classes:
              - name: iso
                match: { folder: iso }
            schedule:
              - { days: daily, time: "00:00-24:00", rate_limit: 1MB, concurrency: 3 }
              - { days: \(later), time: "00:00-24:00", pause: true, rate_limit: 10K }

            """ + (quota ? "quota: [{ period: daily, bytes: 100000 }, { period: daily, bytes: 5000, class: iso }]\n" : "")
    }

    /// The next local midnights as `status --json` writes them, read before and after the command (a
    /// run across midnight sees either).
    static func nextMidnight() -> String {
        let midnight = Calendar.current.startOfDay(for: Date().addingTimeInterval(86_400))
        let format = ISO8601DateFormatter()
        return format.string(from: midnight)
    }

    /// Today in local time, as the ledger names a daily period.
    static func today(offset: Int = 0) -> String {
        let format = DateFormatter()
        format.dateFormat = "yyyy-MM-dd"
        format.timeZone = .current
        format.locale = Locale(identifier: "en_US_POSIX")
        return format.string(from: Date().addingTimeInterval(Double(offset) * 86_400))
    }

    /// Two agents' ledger files, written as QuotaLedger writes them; yesterday's line does not count.
    /// The agents have work folders: only known agents' ledgers count (issue 35).
    static func writeLedgers(_ fixture: SpoolFixture) throws {
        try FileManager.default.createDirectory(atPath: fixture.spool + "/quota", withIntermediateDirectories: true)
        for agent in ["agent-a", "agent-b"] {
            try FileManager.default.createDirectory(atPath: fixture.spool + "/work/" + agent, withIntermediateDirectories: true)
        }
        let today = today()
        try "daily \(today) default 1000\ndaily \(today) iso 500\ndaily \(Self.today(offset: -1)) default 90000\n"
            .write(toFile: fixture.spool + "/quota/agent-a", atomically: true, encoding: .utf8)
        try "daily \(today) iso 2000\nweekly \(today) iso 70000\n"
            .write(toFile: fixture.spool + "/quota/agent-b", atomically: true, encoding: .utf8)
    }

    @Test("status --json: the window in force (not the other), its limits and the next change; without schedule: no member")
    func jsonSchedule() throws {
        let fixture = try SpoolFixture()
        #expect(try fixture.statusReport()["schedule"] == nil)
        #expect(try fixture.statusReport()["quotas"] == nil)
        try fixture.writeConfig(Self.config(quota: false))
        let before = Self.nextMidnight()
        let report = try fixture.statusReport()
        let schedule = try #require(report["schedule"] as? [String: Any], "\(report)")
        #expect(schedule["windows_in_force"] as? [String] == ["daily 00:00-24:00"])
        let limits = schedule["limits"] as? [String: Any]
        #expect(limits?["rate_limit"] as? Int == 1 << 20)
        #expect(limits?["concurrency"] as? Int == 3)
        #expect(limits?["pause"] as? String == "off")
        #expect([before, Self.nextMidnight()].contains(schedule["next_change"] as? String ?? ""), "\(schedule)")
        #expect(report["quotas"] == nil)
    }

    @Test("status --json and status: each quota's use summed over two agents' ledger files, what is left, the reset")
    func quotasSummed() throws {
        let fixture = try SpoolFixture()
        try fixture.writeConfig(Self.config(quota: true))
        try Self.writeLedgers(fixture)
        let midnight = Self.nextMidnight()
        let quotas = try #require(try fixture.statusReport()["quotas"] as? [[String: Any]])
        #expect(quotas.count == 2)
        #expect(quotas.first?["period"] as? String == "daily")
        #expect(quotas.first?["class"] is NSNull)
        #expect(quotas.first?["bytes"] as? Int == 100_000)
        #expect(quotas.first?["used"] as? Int == 3500)
        #expect(quotas.first?["left"] as? Int == 96_500)
        #expect(quotas.last?["class"] as? String == "iso")
        #expect(quotas.last?["used"] as? Int == 2500)
        #expect(quotas.last?["left"] as? Int == 2500)
        #expect([midnight, Self.nextMidnight()].contains(quotas.last?["resets"] as? String ?? ""), "\(quotas)")

        let text = try fixture.capture(["status"])
        #expect(text.ending == .exited(0))
        #expect(text.stdout.contains("window in force: daily 00:00-24:00"), "\(text)")
        #expect(text.stdout.contains("concurrency 3"), "\(text)")
        #expect(text.stdout.contains("next change: "), "\(text)")
        // Where a person reads it: local time with its offset, absolute (issue 36; JSON keeps UTC).
        #expect(text.stdout.range(of: #"next change: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"#, options: .regularExpression) != nil, "\(text)")
        #expect(text.stdout.range(of: #"resets \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"#, options: .regularExpression) != nil, "\(text)")
        #expect(!text.stdout.contains("(in "), "no relative time that goes stale: \(text)")
        #expect(text.stdout.contains("quota daily iso: 2.4 KiB used of 4.9 KiB, 2.4 KiB left"), "\(text)")
        #expect(text.stdout.contains("quota daily: 3.4 KiB used of 97.7 KiB, 94.2 KiB left"), "\(text)")
    }

    @Test("status --html shows the window in force and each quota's use")
    func htmlSchedule() throws {
        let fixture = try SpoolFixture()
        try fixture.writeConfig(Self.config(quota: true))
        try Self.writeLedgers(fixture)
        let page = try fixture.capture(["status", "--html"])
        #expect(page.ending == .exited(0))
        #expect(page.stdout.contains("<section id=\"schedule\""), "\(page.stdout)")
        #expect(page.stdout.contains("<dt>window in force</dt><dd>daily 00:00-24:00</dd>"), "\(page.stdout)")
        #expect(page.stdout.contains("<dt>quota daily iso</dt><dd>2.4 KiB used of 4.9 KiB"), "\(page.stdout)")
    }

    @Test("the metrics file after run --once has the limits in force and each quota's bytes used and limit")
    func metricsGauges() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(10_000, seed: 273)
        server.serve("/m.bin", body: body)
        let fixture = try SpoolFixture()
        let metrics = fixture.root.path + "/dropfetch.prom"
        try fixture.writeConfig("metrics_file: \(metrics)\n" + Self.config(quota: true))
        try Self.writeLedgers(fixture)
        try fixture.drop("m.url", server.url("/m.bin") + "\n")
        #expect(try fixture.runOnce(timeout: 60) == 0, "\(fixture.log)")
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains("dropfetch_rate_limit_bytes_per_second{agent=\"test-agent\"} 1048576"), "\(text)")
        #expect(text.contains("dropfetch_concurrency_limit{agent=\"test-agent\"} 3"), "\(text)")
        #expect(text.contains("dropfetch_schedule_paused{agent=\"test-agent\"} 0"), "\(text)")
        #expect(text.contains("dropfetch_quota_used_bytes{agent=\"test-agent\",period=\"daily\",class=\"\"} 13500"), "\(text)")
        #expect(text.contains("dropfetch_quota_limit_bytes{agent=\"test-agent\",period=\"daily\",class=\"\"} 100000"), "\(text)")
        #expect(text.contains("dropfetch_quota_used_bytes{agent=\"test-agent\",period=\"daily\",class=\"iso\"} 2500"), "\(text)")
    }
}
