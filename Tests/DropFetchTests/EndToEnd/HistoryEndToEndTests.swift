import Foundation
import Glibc
import Testing
@testable import DropFetch

/// DESIGN.md §10 "History", with the real agent and the real commands: what a pass removes, what
/// it leaves, and `dropfetch purge` as a person runs it.
@Suite("History end to end")
struct HistoryEndToEndTests {
    /// Rewrites the `finished` time of record `name` in `folder` to `age` seconds ago.
    static func age(_ fixture: SpoolFixture, _ folder: String, _ name: String, by age: Int64) throws {
        let path = fixture.spool + "/" + folder + "/" + Spool.statusName(forJob: name)
        var record = try #require(StatusRecord.decode(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        record.finished = Timestamp.format(seconds: Int64(Date().timeIntervalSince1970) - age)
        try Data(record.encoded()).write(to: URL(fileURLWithPath: path))
    }

    @Test("two purges at once, one per agent's config: every old record removed once, nothing else lost")
    func twoPurgesAtOnce() throws {
        try Self.purgesAtOnce(try SpoolFixture(), views: (0, 0))
    }

    /// 60 finished jobs an hour old, 5 new ones, a held and a waiting job and their files; agents a
    /// and b (on `views`) run `purge --older-than 30m` at the same moment: the old records are gone,
    /// everything else is there.
    static func purgesAtOnce(_ fixture: SpoolFixture, views: (Int, Int)) throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(2_000, seed: 3807)
        server.serve("/h/f.bin", body: body)
        for index in 0..<65 { try fixture.drop("j\(index).url", server.url("/h/f.bin") + "\n  out=f\(index).bin\n") }
        let configA = try fixture.writeAgentConfig(agentID: "a", view: views.0, "concurrency: { total: 8, per_host: 8 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", view: views.1)
        #expect(try AgentProcess.run(["run", "--once"], config: configA, log: fixture.logPath, in: fixture) == .exited(0),
                "\(fixture.log)")
        #expect(fixture.jobs(in: "done").count == 65)
        for index in 0..<60 { try age(fixture, "done", "j\(index).url", by: 3600) }
        try fixture.drop("waiting.url", server.url("/h/f.bin") + "\n")
        try FileManager.default.createDirectory(atPath: fixture.spool + "/hold", withIntermediateDirectories: true)
        try "http://127.0.0.1:1/held\n".write(toFile: fixture.spool + "/hold/held.url", atomically: false, encoding: .utf8)

        let purges = try [configA, configB].map {
            try AgentProcess(["purge", "--older-than", "30m"], config: $0, log: fixture.logPath, in: fixture)
        }
        for purge in purges { try purge.start() }
        for purge in purges { #expect(try purge.wait(timeout: .seconds(60)) == .exited(0), "\(fixture.log)") }

        #expect(fixture.jobs(in: "done") == (60..<65).map { "j\($0).url" }.sorted())
        #expect(fixture.names(in: "done").filter { $0.hasSuffix(".status.json") }.count == 5, "no lone status file")
        #expect(fixture.jobs(in: "inbox") == ["waiting.url"] && fixture.jobs(in: "hold") == ["held.url"])
        #expect(fixture.destinationNames().filter { $0.hasSuffix(".bin") }.count == 65, "no downloaded file removed")
        #expect(fixture.downloaded("f0.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("keep: 3s: records finished over 3 s ago are gone after the next pass; files, held and waiting jobs stay")
    func daemonKeep() throws {
        let server = try TestHTTPServer()
        let bodies = (0..<3).map { TestHTTPServer.randomBytes(20_000, seed: 3800 + UInt64($0)) }
        for (index, name) in ["a", "b", "c"].enumerated() { server.serve("/\(name).bin", body: bodies[index]) }
        server.setFaults("/later.bin", [.status(code: 503, headers: [("Retry-After", "3600")])])
        let fixture = try SpoolFixture()
        let metrics = fixture.root.path + "/metrics.prom"
        try fixture.writeConfig("history: { keep: 3s }\nmetrics_file: \(metrics)\n")
        try FileManager.default.createDirectory(atPath: fixture.spool + "/hold", withIntermediateDirectories: true)
        try (server.url("/c.bin") + "\n").write(toFile: fixture.spool + "/hold/held.url", atomically: true, encoding: .utf8)
        for name in ["a", "b", "c", "later"] { try fixture.drop(name + ".url", server.url("/\(name).bin") + "\n") }
        try fixture.startDaemon()
        #expect(try waitUntil(timeout: .seconds(30)) {
            fixture.jobs(in: "done") == ["a.url", "b.url", "c.url"] && fixture.stateJSON("later.url")?["state"] as? String == "waiting"
        }, "\(fixture.logTail())")
        try fixture.stopDaemon()

        // a and b finished a minute ago; c just now: the start-up pass removes a and b.
        try Self.age(fixture, "done", "a.url", by: 60)
        try Self.age(fixture, "done", "b.url", by: 60)
        try Self.age(fixture, "done", "c.url", by: 0)
        try fixture.startDaemon()
        defer { _ = try? fixture.stopDaemon() }
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.names(in: "done") == ["c.status.json", "c.url"] },
                "\(fixture.names(in: "done"))\n\(fixture.logTail())")
        // The pass removes on its own thread; the loop logs and counts once it picks up the result.
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("history: removed 2 finished jobs") }, "\(fixture.logTail())")
        #expect(try waitUntil(timeout: .seconds(10)) {
            ((try? String(contentsOfFile: metrics, encoding: .utf8)) ?? "").contains("\ndropfetch_history_removed_total{agent=\"test-agent\"} 2\n")
        })
        for (index, name) in ["a", "b", "c"].enumerated() {
            #expect(fixture.downloaded(name + ".bin") == bodies[index], "\(name).bin must stay in the destination")
        }
        #expect(fixture.names(in: "hold") == ["held.url"])
        #expect(fixture.stateJSON("later.url")?["state"] as? String == "waiting")
        #expect(StatusFields.jobs(in: try fixture.statusReport(), "recent") == ["c.url"])
    }

    @Test("run --once ends with one pass: max_jobs: 3 keeps the three newest of done/ and failed/ together")
    func oncePass() throws {
        let server = try TestHTTPServer()
        for name in ["j1", "j2", "j4"] { server.serve("/\(name).bin", body: TestHTTPServer.randomBytes(5_000, seed: 3810)) }
        let fixture = try SpoolFixture(extraConfig: "history: { max_jobs: 3 }\n")
        try fixture.drop("j1.url", server.url("/j1.bin") + "\n")
        #expect(try fixture.runOnce() == 0)
        // j3 fails (404): failed/ counts with done/.
        for name in ["j2", "j3", "j4"] { try fixture.drop(name + ".url", server.url("/\(name).bin") + "\n") }
        #expect(try fixture.runOnce() == 1)
        #expect(fixture.jobs(in: "done") == ["j2.url", "j4.url"], "\(fixture.logTail())")
        #expect(fixture.jobs(in: "failed") == ["j3.url"])
        #expect(fixture.names(in: "done").count == 4 && fixture.names(in: "failed").count == 2)
        #expect(fixture.log.contains("history: removed 1 finished jobs"), "\(fixture.logTail())")
        #expect(fixture.downloaded("j1.bin") != nil, "the removed job's file stays")
    }

    @Test("purge: no rule exits 2; --dry-run counts and removes nothing; --older-than removes; --json; bad values exit 2")
    func purgeCommand() throws {
        let fixture = try SpoolFixture()
        for (index, folder) in ["done", "failed", "done", "done"].enumerated() {
            let name = "p\(index).url"
            try "https://h.example/\(index)\n".write(toFile: fixture.spool + "/\(folder)/\(name)", atomically: true, encoding: .utf8)
            var record = StatusRecord(job: name, state: folder == "done" ? .done : .failed, className: "default", priority: 0,
                                      agent: "x", submitted: "")
            record.finished = Timestamp.format(seconds: Int64(Date().timeIntervalSince1970) - (index < 3 ? 7200 : 0))
            try Data(record.encoded()).write(to: URL(fileURLWithPath: fixture.statusPath(folder, name)))
        }
        let before = fixture.names(in: "done") + fixture.names(in: "failed")

        let refused = try fixture.capture(["purge"])
        #expect(refused.ending == .exited(2), "\(refused)")
        #expect(refused.stderr.contains("--older-than") && refused.stderr.contains("history:"), "\(refused)")
        #expect(fixture.names(in: "done") + fixture.names(in: "failed") == before)

        let dry = try fixture.capture(["purge", "--older-than", "1h", "--dry-run", "--json"])
        #expect(dry.ending == .exited(0), "\(dry)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any], "\(dry)")
        #expect(report["selected"] as? Int == 3 && report["removed"] as? Int == 0 && report["dry_run"] as? Bool == true)
        #expect(fixture.names(in: "done") + fixture.names(in: "failed") == before)

        let bad = try fixture.capture(["purge", "--older-than", "5"])
        #expect(bad.ending == .exited(2), "\(bad)")

        let purged = try fixture.capture(["purge", "--older-than", "1h"])
        #expect(purged.ending == .exited(0), "\(purged)")
        #expect(purged.stdout.contains("removed 3 finished jobs"), "\(purged)")
        #expect(fixture.names(in: "done") == ["p3.status.json", "p3.url"] && fixture.names(in: "failed").isEmpty)
    }

    @Test("check: a bad history: value is reported with file:line:col, exit 2")
    func checkLocatesBadValue() throws {
        let fixture = try SpoolFixture(extraConfig: "history:\n  keep: 30\n")
        let result = try fixture.capture(["check"])
        #expect(result.ending == .exited(2), "\(result)")
        let lines = try String(contentsOfFile: fixture.configPath, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let line = try #require(lines.firstIndex { $0 == "  keep: 30" }) + 1
        #expect(result.stderr.contains("\(fixture.configPath):\(line):9: history.keep"), "\(result)")
    }
}
