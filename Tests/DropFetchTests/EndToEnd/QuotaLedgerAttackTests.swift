import Foundation
import Glibc
import Testing

/// Issue 35, items 1, 3, 6 and 7 with the real binary: quota ledgers a spool peer forged, that
/// cannot be written, or that a jumping clock would have pruned (docs/security.md "Quotas").
@Suite("Quota ledgers under attack")
struct QuotaLedgerAttackTests {
    static let twoToThe62 = "4611686018427387904"

    /// Writes `text` as the ledger file of `agent`, giving that agent a work folder when `known`.
    static func plant(_ fixture: SpoolFixture, agent: String, _ text: String, known: Bool = true) throws {
        try FileManager.default.createDirectory(atPath: fixture.spool + "/quota", withIntermediateDirectories: true)
        if known { try FileManager.default.createDirectory(atPath: fixture.spool + "/work/" + agent, withIntermediateDirectories: true) }
        try text.write(toFile: fixture.spool + "/quota/" + agent, atomically: true, encoding: .utf8)
    }

    /// The first quota's `used` in `status --json`.
    static func used(_ fixture: SpoolFixture) throws -> Int? {
        (try fixture.statusReport()["quotas"] as? [[String: Any]])?.first?["used"] as? Int
    }

    /// Seconds since local midnight now.
    static func secondsToday() -> Int {
        Int(Date().timeIntervalSince(Calendar.current.startOfDay(for: Date())))
    }

    @Test("two forged counts of 2^62 (one file, then two) neither kill status nor run at start-up: the quota reads as reached")
    func forgedLedgerAtStartUp() throws {
        let fixture = try SpoolFixture(extraConfig: "once_wait: 1s\nquota: [{ period: daily, bytes: 1GB }]\n")
        let today = ScheduleStatusTests.today()
        let line = "daily \(today) default \(Self.twoToThe62)\n"
        try Self.plant(fixture, agent: "peer-a", line + line)
        let status = try fixture.capture(["status", "--json"])
        #expect(status.ending == .exited(0), "\(status)")
        #expect(try fixture.runOnce(timeout: 30) == 0, "\(fixture.log)")
        try Self.plant(fixture, agent: "peer-b", line)
        try Self.plant(fixture, agent: "peer-a", line)
        #expect(try fixture.capture(["status", "--json"]).ending == .exited(0))
        #expect(try fixture.runOnce(timeout: 30) == 0, "\(fixture.log)")
        let used = try #require(try Self.used(fixture))
        #expect(used >= 1_000_000_000 && used <= 1 << 62, "used \(used)")
    }

    @Test("a forged ledger written while the agent runs: it logs the quota reached at its next exchange and stays up")
    func forgedLedgerWhileRunning() throws {
        let fixture = try SpoolFixture()
        // A rescan each second wakes the idle agent, and with it the ledger exchange.
        let config = try fixture.writeFullConfig("config.yaml", "scan_interval: 1s\nquota: [{ period: daily, bytes: 1GB }]\n")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("agent started") }, "\(fixture.log)")
        let line = "daily \(ScheduleStatusTests.today()) default \(Self.twoToThe62)\n"
        try Self.plant(fixture, agent: "peer-a", line)
        try Self.plant(fixture, agent: "peer-b", line)
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("quota reached") }, "\(fixture.log)")
        #expect(agent.isRunning, "\(fixture.log)")
        #expect(try agent.stop() == .exited(0), "\(fixture.log)")
    }

    @Test("only ledgers of agents with a work folder count, each bounded by what the config's rate lets an agent fetch since the period began")
    func ledgerValuesBoundedAndForeignIgnored() throws {
        let fixture = try SpoolFixture(extraConfig: "limits: { rate_limit: 1MiB }\nquota: [{ period: daily, bytes: 10TB }]\n")
        let today = ScheduleStatusTests.today()
        try Self.plant(fixture, agent: "peer", "daily \(today) default 1000\n")
        try Self.plant(fixture, agent: "stranger", "daily \(today) default 5000\n", known: false)
        try Self.plant(fixture, agent: ".hidden", "daily \(today) default 7000\n")
        #expect(try Self.used(fixture) == 1000)
        // 1 TiB at 1 MiB/s would take 12 days: a day's count holds at most the day so far (plus a minute's slack).
        try Self.plant(fixture, agent: "peer", "daily \(today) default 1099511627776\n")
        let before = Self.secondsToday()
        let used = try #require(try Self.used(fixture))
        let after = Self.secondsToday()
        #expect(used >= (min(before, after) + 60) << 20 && used <= (max(before, after) + 61) << 20, "used \(used) at \(before) s")
    }

    @Test("a clock that jumps 40 days ahead and back loses no count: the month's and the day's bytes are still counted after the return")
    func clockJumpKeepsCounts() throws {
        let server = try TestHTTPServer()
        server.serve("/a.bin", body: TestHTTPServer.randomBytes(100_000, seed: 3501))
        server.serve("/b.bin", body: TestHTTPServer.randomBytes(20_000, seed: 3502))
        server.serve("/c.bin", body: TestHTTPServer.randomBytes(3_000, seed: 3503))
        let fixture = try SpoolFixture(extraConfig: "once_wait: 1s\nquota: [{ period: monthly, bytes: 1GB }]\n")
        let ledger = fixture.spool + "/quota/test-agent"
        for (job, clock) in [("a", "2027-06-10 12:00:00"), ("b", "2027-07-20 12:00:00"), ("c", "2027-06-10 12:30:00")] {
            try fixture.drop("\(job).url", server.url("/\(job).bin") + "\n")
            let agent = try ScheduleTests.startAgent(["run", "--once"], fixture, clock: clock)
            #expect(try agent.wait(timeout: .seconds(30)) == .exited(0), "\(fixture.log)")
        }
        let text = try String(contentsOfFile: ledger, encoding: .utf8)
        #expect(text.contains("monthly 2027-06-01 default 103000\n"), "\(text)")
        #expect(text.contains("daily 2027-06-10 default 103000\n"), "\(text)")
        #expect(text.contains("monthly 2027-07-01 default 20000\n"), "\(text)")
    }

    @Test("a ledger that cannot be written (a folder in its place, or quota/ a symlink) is logged once and retried with backoff: an idle agent neither spins nor floods the log over 10 s",
          arguments: ["folder in its place", "quota/ a symlink"])
    func unwritableLedgerDoesNotSpin(_ obstacle: String) throws {
        let server = try TestHTTPServer()
        server.serve("/u.bin", body: TestHTTPServer.randomBytes(50_000, seed: 3504))
        let fixture = try SpoolFixture(extraConfig: "quota: [{ period: daily, bytes: 1GB }]\n")
        if obstacle == "quota/ a symlink" {
            try FileManager.default.createDirectory(atPath: fixture.root.path + "/elsewhere", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: fixture.spool, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: fixture.spool + "/quota", withDestinationPath: fixture.root.path + "/elsewhere")
        } else {
            try FileManager.default.createDirectory(atPath: fixture.spool + "/quota/test-agent/x", withIntermediateDirectories: true)
        }
        let agent = try AgentProcess(["run"], config: fixture.configPath, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("u.url", server.url("/u.bin") + "\n")
        #expect(try waitUntil(timeout: .seconds(15)) { fixture.jobs(in: "done") == ["u.url"] }, "\(fixture.log)")
        #expect(try waitUntil(timeout: .seconds(5)) { fixture.log.contains("cannot write the quota ledger") }, "\(fixture.log)")
        let cpuBefore = Self.cpuTicks(agent.pid)
        let linesBefore = fixture.log.split(separator: "\n").count
        Thread.sleep(forTimeInterval: 10)
        let cpu = Double(Self.cpuTicks(agent.pid) - cpuBefore) / Double(sysconf(Int32(_SC_CLK_TCK)))
        let lines = fixture.log.split(separator: "\n").count - linesBefore
        let warnings = fixture.log.components(separatedBy: "cannot write the quota ledger").count - 1
        #expect(cpu < 0.5, "the idle agent used \(cpu) s of CPU in 10 s")
        #expect(lines <= 10, "\(lines) log lines in 10 s idle: \(fixture.logTail(20))")
        #expect(warnings == 1, "\(warnings) warnings: \(fixture.logTail(5))")
        #expect(agent.isRunning)
        try agent.stop()
        if obstacle == "quota/ a symlink" {
            #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.root.path + "/elsewhere").isEmpty)
        }
    }

    /// utime + stime of process `pid` in clock ticks (/proc/PID/stat fields 14 and 15).
    static func cpuTicks(_ pid: Int32) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, so utime (14) and stime (15) are at 11 and 12.
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }
}
