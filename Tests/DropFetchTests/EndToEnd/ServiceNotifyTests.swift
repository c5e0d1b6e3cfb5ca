import DropFetch
import Foundation
import Glibc
import Testing

/// The daemon under a service manager: what it tells a fake `$NOTIFY_SOCKET` (a file path, or a
/// name in the abstract namespace) while it starts, works, reloads and stops.
@Suite("sd_notify, end to end")
struct ServiceNotifyTests {
    /// Starts `dropfetch run` on `fixture` with `NOTIFY_SOCKET` naming `listener`, plus `environment`.
    private func startDaemon(_ fixture: SpoolFixture, _ listener: NotifyListener,
                             _ environment: [String: String] = [:]) throws -> AgentProcess {
        let agent = try AgentProcess(["run"], config: fixture.configPath,
                                     environment: environment.merging(["NOTIFY_SOCKET": listener.address]) { a, _ in a },
                                     log: fixture.logPath, in: fixture)
        try agent.start()
        return agent
    }

    @Test("READY=1, STATUS=…, WATCHDOG=1 (WATCHDOG_USEC set), STOPPING=1, in that order",
          arguments: ["path", "abstract"])
    func lifecycle(kind: String) throws {
        let listener = try NotifyListener(abstract: kind == "abstract")
        let fixture = try SpoolFixture()
        let agent = try startDaemon(fixture, listener, ["WATCHDOG_USEC": "200000"])
        #expect(try waitUntil { listener.messages().filter { $0 == "WATCHDOG=1" }.count >= 2 }, "\(fixture.log)")

        #expect(try agent.stop() == .exited(0))
        let messages = listener.messages()
        let ready = try #require(messages.firstIndex(of: "READY=1"))
        let status = try #require(messages.firstIndex { $0.hasPrefix("STATUS=") })
        let watchdog = try #require(messages.firstIndex(of: "WATCHDOG=1"))
        let stopping = try #require(messages.firstIndex(of: "STOPPING=1"))
        #expect(ready == 0)
        #expect(ready < status && status < watchdog && watchdog < stopping, "\(messages)")
        #expect(stopping == messages.count - 1, "nothing after STOPPING=1: \(messages)")
        #expect(messages[status] == "STATUS=0 queued, 0 active, 0 waiting, 0 held")
        // The spool was ready when systemd heard READY=1: recovery and the first scan were over.
        #expect(FileManager.default.fileExists(atPath: fixture.spool + "/work/test-agent/.lock"))
    }

    @Test("STATUS= follows the spool: a job moved to hold/ shows as held")
    func statusFollowsCounts() throws {
        let listener = try NotifyListener(abstract: true)
        let fixture = try SpoolFixture()
        let agent = try startDaemon(fixture, listener, ["WATCHDOG_USEC": "200000"])
        #expect(try waitUntil { listener.messages().contains { $0.hasPrefix("STATUS=") } }, "\(fixture.log)")
        try FileManager.default.createDirectory(atPath: fixture.spool + "/hold", withIntermediateDirectories: true)
        try "https://example.invalid/x.iso\n".write(toFile: fixture.spool + "/hold/x.url", atomically: true, encoding: .utf8)

        #expect(try waitUntil { listener.messages().contains("STATUS=0 queued, 0 active, 0 waiting, 1 held") })
        #expect(try agent.stop() == .exited(0))
    }

    @Test("SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1 again")
    func reload() throws {
        let listener = try NotifyListener(abstract: false)
        let fixture = try SpoolFixture()
        let agent = try startDaemon(fixture, listener)
        #expect(try waitUntil { listener.messages().contains("READY=1") }, "\(fixture.log)")

        kill(agent.pid, SIGHUP)
        #expect(try waitUntil { listener.messages().filter { $0 == "READY=1" }.count == 2 }, "\(fixture.log)")
        #expect(try agent.stop() == .exited(0))
        let messages = listener.messages()
        let reloading = try #require(messages.firstIndex { $0.hasPrefix("RELOADING=1\n") })
        #expect(messages[reloading].split(separator: "\n").last?.hasPrefix("MONOTONIC_USEC=") == true)
        #expect(messages[(reloading + 1)...].first == "READY=1")
        #expect(!messages.contains("WATCHDOG=1"), "no WATCHDOG_USEC, no watchdog")
    }

    @Test("WATCHDOG_PID naming another process: no WATCHDOG=1")
    func watchdogForAnotherProcess() throws {
        let listener = try NotifyListener(abstract: true)
        let fixture = try SpoolFixture()
        let agent = try startDaemon(fixture, listener, ["WATCHDOG_USEC": "2000", "WATCHDOG_PID": "1"])
        #expect(try waitUntil { listener.messages().contains("READY=1") }, "\(fixture.log)")
        // A reload is a later loop turn: by then a 1 ms watchdog would have fired many times.
        kill(agent.pid, SIGHUP)
        #expect(try waitUntil { listener.messages().filter { $0 == "READY=1" }.count == 2 }, "\(fixture.log)")
        #expect(try agent.stop() == .exited(0))
        #expect(!listener.messages().contains("WATCHDOG=1"))
    }

    @Test("hooks do not inherit NOTIFY_SOCKET or the watchdog variables")
    func hooksDoNotInherit() throws {
        let server = try TestHTTPServer()
        server.serve("/h.bin", body: TestHTTPServer.randomBytes(1000, seed: 90))
        let fixture = try SpoolFixture()
        let envFile = fixture.root.path + "/hook-env"
        try fixture.writeConfig("hooks: { on_done: [/bin/sh, -c, 'env > \(envFile).tmp && mv \(envFile).tmp \(envFile)'] }\n")
        let listener = try NotifyListener(abstract: true)
        let agent = try startDaemon(fixture, listener, ["WATCHDOG_USEC": "5000000"])
        try fixture.drop("h.url", server.url("/h.bin") + "\n")

        #expect(try waitUntil { FileManager.default.fileExists(atPath: envFile) }, "\(fixture.log)")
        #expect(try agent.stop() == .exited(0))
        let environment = try String(contentsOfFile: envFile, encoding: .utf8)
        #expect(environment.contains("DROPFETCH_JOB=h.url"))
        #expect(!environment.contains("NOTIFY_SOCKET="))
        #expect(!environment.contains("WATCHDOG_USEC="))
    }
}
