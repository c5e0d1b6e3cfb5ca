import DropFetch
import Foundation
import Testing

/// Control of jobs an agent holds (issue 25, items 3, 4 and 6): `retry` of a waiting job makes
/// it due now, as hold + release does; `cancel` of a running job is logged, announced and counted
/// like any cancelled job; `status` marks the jobs of an agent that is gone.
@Suite("Control of claimed jobs, end to end")
struct ControlOfClaimedJobsTests {
    /// A daemon whose job `w.url` waits about 40 s for its retry after a 503.
    private func waitingJob(_ fixture: SpoolFixture, _ server: TestHTTPServer, _ extra: String = "") throws -> AgentProcess {
        server.serve("/w.bin", body: TestHTTPServer.randomBytes(50_000, seed: 2_510),
                     faults: [.times(1, .status(code: 503, headers: [("Retry-After", "40")]))])
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 5, initial_delay: 40s, max_delay: 40s }", extra)
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("w.url", server.url("/w.bin") + "\n")
        #expect(try waitUntil { fixture.stateJSON("w.url")?["state"] as? String == "waiting" }, "\(fixture.logTail())")
        return agent
    }

    @Test("retry of a waiting job: due now, done long before its retry time, attempts kept")
    func retryWaitingJob() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        let agent = try waitingJob(fixture, server)
        let config = fixture.root.path + "/config-test-agent.yaml"
        let began = Date()
        let retry = try fixture.capture(["retry", "w"], config: config)
        #expect(retry.ending == .exited(0), "\(retry.stderr)")
        #expect(try waitUntil(timeout: .seconds(15)) { fixture.jobs(in: "done") == ["w.url"] }, "\(fixture.logTail())")
        #expect(Date().timeIntervalSince(began) < 30)
        #expect(try fixture.status("done", "w.url").attempts == 2)
        #expect(try agent.stop() == .exited(0))
    }

    @Test("hold then release of a waiting job: due now")
    func holdReleaseWaitingJob() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        let agent = try waitingJob(fixture, server)
        let config = fixture.root.path + "/config-test-agent.yaml"
        #expect(try fixture.capture(["hold", "w"], config: config).ending == .exited(0))
        #expect(try fixture.capture(["release", "w"], config: config).ending == .exited(0))
        #expect(try waitUntil(timeout: .seconds(15)) { fixture.jobs(in: "done") == ["w.url"] }, "\(fixture.logTail())")
        #expect(try agent.stop() == .exited(0))
    }

    @Test("retry of a job that is neither failed nor waiting: exit 1, nothing moved")
    func retryQueuedJob() throws {
        let fixture = try SpoolFixture()
        try FileManager.default.createDirectory(atPath: fixture.spool + "/work/gone", withIntermediateDirectories: true)
        try "http://127.0.0.1:1/q.bin\n".write(toFile: fixture.spool + "/work/gone/q.url", atomically: false, encoding: .utf8)
        let result = try fixture.capture(["retry", "q"])
        #expect(result.ending == .exited(1))
        #expect(result.stderr.contains("not waiting"), "\(result.stderr)")
        #expect(fixture.jobs(in: "work/gone") == ["q.url"])
    }

    @Test("cancel of a running job: `job cancelled` logged, on_failed run with DROPFETCH_STATE=cancelled, counted")
    func cancelRunningJob() throws {
        let server = try TestHTTPServer()
        server.serve("/c.bin", body: TestHTTPServer.randomBytes(1_200_000, seed: 2_511),
                     faults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))])
        let fixture = try SpoolFixture()
        let record = fixture.root.path + "/hook.env"
        let metrics = fixture.root.path + "/dropfetch.prom"
        let config = try fixture.writeAgentConfig(agentID: "test-agent", """
            metrics_file: \(metrics)
            hooks:
              on_failed: [/bin/sh, -c, 'env | grep ^DROPFETCH_ | sort > \(record)']

            """)
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("c.url", server.url("/c.bin") + "\n")
        #expect(try waitUntil { (fixture.fileSize(fixture.destination + "/.c.bin.part") ?? 0) >= 100_000 }, "\(fixture.logTail())")

        #expect(try fixture.capture(["cancel", "c"], config: config).ending == .exited(0))
        // The hook's shell creates the file before grep has written to it: wait for its content.
        #expect(try waitUntil { ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains("DROPFETCH_STATUS_FILE=") },
                "\(fixture.logTail())")
        let environment = try String(contentsOfFile: record, encoding: .utf8)
        #expect(environment.contains("DROPFETCH_JOB=c.url"))
        #expect(environment.contains("DROPFETCH_STATE=cancelled"))
        #expect(environment.contains("DROPFETCH_STATUS_FILE=\(fixture.spool)/failed/c.status.json"))
        let line = try #require(fixture.log.split(separator: "\n").first { $0.contains("msg=\"job cancelled\"") },
                                "\(fixture.logTail())")
        #expect(line.contains("job=c.url") && line.contains("error=cancelled"), "\(line)")
        #expect(try waitUntil {
            ((try? String(contentsOfFile: metrics, encoding: .utf8)) ?? "").contains("dropfetch_jobs_total{agent=\"test-agent\",state=\"cancelled\"} 1")
        }, "\((try? String(contentsOfFile: metrics, encoding: .utf8)) ?? "no metrics")")
        #expect(try agent.stop() == .exited(0))
    }

    @Test("status marks the jobs of an agent killed with SIGKILL: orphaned in text, agent_alive false in JSON, no speed")
    func orphanedJobs() throws {
        let server = try TestHTTPServer()
        server.serve("/o.bin", body: TestHTTPServer.randomBytes(1_200_000, seed: 2_512),
                     faults: [.times(1, .drip(bytesPerChunk: 20_000, interval: .milliseconds(60)))])
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("o.url", server.url("/o.bin") + "\n")
        #expect(try waitUntil {
            (fixture.stateJSON("o.url")?["downloads"] as? [[String: Any]])?.first?["bytes_per_second"] != nil
        }, "\(fixture.logTail())")
        let alive = try fixture.statusReport(config: config)
        #expect((alive["active"] as? [[String: Any]])?.first?["agent_alive"] as? Bool == true, "\(alive)")

        #expect(agent.kill() == .signalled(SIGKILL))
        let report = try fixture.statusReport(config: config)
        let entry = try #require(((report["active"] as? [[String: Any]]) ?? []).first { $0["job"] as? String == "o.url" },
                                 "\(report)")
        #expect(entry["agent_alive"] as? Bool == false)
        let speed = (entry["downloads"] as? [[String: Any]])?.first?["bytes_per_second"]
        #expect(speed == nil || speed is NSNull, "a gone agent's speed is stale: \(entry)")
        let text = try fixture.capture(["status"], config: config)
        #expect(text.stdout.contains("orphaned: 1"), "\(text.stdout)")
        #expect(text.stdout.contains("orphaned (was running)"), "\(text.stdout)")
        #expect(text.stdout.contains("active: 0"), "\(text.stdout)")
        #expect(!text.stdout.contains("/s"), "no speed for a gone agent's job: \(text.stdout)")
    }
}
