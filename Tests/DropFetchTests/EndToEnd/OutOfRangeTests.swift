import Foundation
import Glibc
import Testing

/// docs/config.md: a number out of range (a duration beyond 100 years, a size beyond 2^62, an
/// integer beyond Int64) is an error naming the key, never a crash; the same holds for numbers
/// in job files, where any 64-bit `priority` is allowed (issue 9, item 9).
@Suite("Out-of-range numbers, end to end")
struct OutOfRangeTests {
    /// A config line and the key path its error must name.
    struct ConfigCase: Sendable, CustomTestStringConvertible {
        let yaml: String
        let key: String
        var testDescription: String { yaml.trimmingCharacters(in: .newlines) }
    }

    static let configCases: [ConfigCase] = [
        ConfigCase(yaml: "once_wait: 106752d\n", key: "once_wait"),
        ConfigCase(yaml: "once_wait: 9223372036854775807ms\n", key: "once_wait"),
        ConfigCase(yaml: "scan_interval: 9223372036854775807ms\n", key: "scan_interval"),
        ConfigCase(yaml: "scan_interval: 36600d\n", key: "scan_interval"),
        ConfigCase(yaml: "limits: { max_job_file_size: 9223372036854775807 }\n", key: "limits.max_job_file_size"),
        ConfigCase(yaml: "limits: { max_file_size: 4611686018427387905 }\n", key: "limits.max_file_size"),
        ConfigCase(yaml: "limits: { max_file_size: 5000000000G }\n", key: "limits.max_file_size"),
        ConfigCase(yaml: "retry: { attempts: 3, initial_delay: 106752d }\n", key: "retry.initial_delay"),
        ConfigCase(yaml: "retry: { attempts: 99999999999999999999 }\n", key: "retry.attempts"),
        ConfigCase(yaml: "concurrency: { total: 9223372036854775808 }\n", key: "concurrency.total"),
    ]

    @Test("check, run --once and run refuse an out-of-range config number: exit 2, stderr names the key, no crash, no job run",
          arguments: configCases)
    func configNumberOutOfRange(_ item: ConfigCase) throws {
        let server = try TestHTTPServer()
        // A job that waits for a retry (an hour): the arithmetic on once_wait and the timers runs at once.
        server.serve("/busy.bin", body: TestHTTPServer.randomBytes(2_000, seed: 9_903),
                     faults: [.status(code: 503, headers: [("Retry-After", "3600")])])
        let fixture = try SpoolFixture()
        try fixture.dropSettled("busy.url", server.url("/busy.bin") + "\n")
        let config = try fixture.writeFullConfig("config-range.yaml", item.yaml)

        let check = try fixture.capture(["check"], config: config)
        #expect(check.ending == .exited(2), "check: \(check)")
        #expect(check.stderr.contains(item.key), "check does not name \(item.key): \(check)")

        let once = try fixture.capture(["run", "--once"], config: config, timeout: .seconds(10))
        #expect(once.ending == .exited(2), "run --once: \(once)")
        #expect(once.stderr.contains(item.key), "run --once does not name \(item.key): \(once)")

        let daemonLog = fixture.root.path + "/daemon.log"
        let daemon = try AgentProcess(["run"], config: config, log: daemonLog, in: fixture)
        try daemon.start()
        if try waitUntil(timeout: .seconds(5), { !daemon.isRunning }) {
            let text = (try? String(contentsOfFile: daemonLog, encoding: .utf8)) ?? ""
            #expect(try daemon.wait() == .exited(2), "run: \(text)")
            #expect(text.contains(item.key), "run does not name \(item.key): \(text)")
        } else {
            let ending = daemon.kill()
            Issue.record("run (daemon) was still running 5 s after its start with \(item.testDescription) (then \(ending))")
        }
        #expect(fixture.jobs(in: "inbox") == ["busy.url"], "a job was run under an invalid config")
        #expect(server.requests.isEmpty, "a job was run under an invalid config")
    }

    @Test("large numbers within range are accepted by check and run --once on an empty spool (no overflow in the loop)")
    func largeNumbersWithinRange() throws {
        let fixture = try SpoolFixture()
        let config = try fixture.writeFullConfig("config-big.yaml", """
            once_wait: 500ms
            scan_interval: 36000d
            retry: { attempts: 5, initial_delay: 36000d, max_delay: 36000d }
            limits: { max_job_file_size: 4611686018427387904, max_file_size: 4611686018427387904, timeout: 36000d }

            """)
        let check = try fixture.capture(["check"], config: config)
        #expect(check.ending == .exited(0), "check: \(check)")
        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "run --once: \(once)")
    }

    @Test("a daemon with once_wait and scan_interval near the limits runs and stops cleanly")
    func daemonWithLargeIntervals() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(5_000, seed: 9_900)
        server.serve("/big-interval.bin", body: body)
        let fixture = try SpoolFixture()
        let config = try fixture.writeFullConfig("config-daemon.yaml", "once_wait: 36000d\nscan_interval: 36000d\n")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("big-interval.url", server.url("/big-interval.bin") + "\n")
        #expect(try waitUntil(timeout: .seconds(15)) { fixture.jobs(in: "done") == ["big-interval.url"] || !agent.isRunning },
                "\(fixture.logTail())")
        #expect(agent.isRunning, "the daemon died: \(fixture.logTail())")
        #expect(try agent.stop() == .exited(0))
        expectDone(fixture, "big-interval.url", body: body)
    }

    @Test("priority=3000000000 and ±2^63 bounds are accepted and done; priority=99999999999999999999 is invalid_job")
    func jobPriorityRange() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(3_000, seed: 9_901)
        for name in ["p3e9", "pmax", "pmin", "phuge", "pneghuge"] { server.serve("/\(name).bin", body: body) }
        let fixture = try SpoolFixture()
        try fixture.dropSettled("p3e9.url", "priority=3000000000\n" + server.url("/p3e9.bin") + "\n")
        try fixture.dropSettled("pmax.url", "priority=9223372036854775807\n" + server.url("/pmax.bin") + "\n")
        try fixture.dropSettled("pmin.url", "priority=-9223372036854775808\n" + server.url("/pmin.bin") + "\n")
        try fixture.dropSettled("phuge.url", "priority=99999999999999999999\n" + server.url("/phuge.bin") + "\n")
        try fixture.dropSettled("pneghuge.url", "priority=-9223372036854775809\n" + server.url("/pneghuge.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(1), "one job is invalid: \(once)")

        #expect(fixture.jobs(in: "done") == ["p3e9.url", "pmax.url", "pmin.url"], "\(fixture.statusObject("failed", "p3e9.url") ?? [:])")
        #expect(fixture.jobs(in: "failed") == ["phuge.url", "pneghuge.url"])
        #expect(StatusFields.int(fixture.statusObject("done", "p3e9.url")?["priority"]) == 3_000_000_000)
        #expect(StatusFields.int(fixture.statusObject("done", "pmax.url")?["priority"]) == Int64.max)
        #expect(StatusFields.int(fixture.statusObject("done", "pmin.url")?["priority"]) == Int64.min)
        for name in ["phuge.url", "pneghuge.url"] {
            let status = fixture.statusObject("failed", name)
            #expect(StatusFields.errorKind(status) == "invalid_job", "\(name): \(status ?? [:])")
            let message = (status?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("line 1"), "\(name): the message does not name the line: \(message)")
        }
        #expect(server.requests.map(\.path).sorted() == ["/p3e9.bin", "/pmax.bin", "/pmin.bin"],
                "nothing of an invalid job is downloaded")
    }

    @Test("max-download-limit beyond Int64 (also through its unit) is invalid_job naming the line, not a crash")
    func jobRateRange() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(3_000, seed: 9_902)
        server.serve("/ok.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.dropSettled("digits.url", "http://127.0.0.1:1/d.bin\n  max-download-limit=99999999999999999999\n")
        try fixture.dropSettled("unit.url", "http://127.0.0.1:1/u.bin\n  max-download-limit=9000000000G\n")
        try fixture.dropSettled("ok.url", server.url("/ok.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(1), "\(once)")
        #expect(fixture.jobs(in: "failed") == ["digits.url", "unit.url"])
        for name in ["digits.url", "unit.url"] {
            let status = fixture.statusObject("failed", name)
            #expect(StatusFields.errorKind(status) == "invalid_job", "\(name): \(status ?? [:])")
            let message = (status?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("line 2"), "\(name): \(message)")
        }
        expectDone(fixture, "ok.url", body: body)
    }
}
