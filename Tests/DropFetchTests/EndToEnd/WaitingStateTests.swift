import Foundation
import Testing

/// docs/status-files.md and §5 (issue 9, item 12): a job waiting for a retry says so — `"state":
/// "waiting"` with `retry_at` in its state file, listed under `waiting` (not `active`) by
/// `status --json` and shown by `status` — and `run --once` leaves it in work/ with exit 75.
/// Exit codes when several apply: 2 > 3 > 1 > 75 > 0.
@Suite("A job waiting for a retry is waiting, end to end")
struct WaitingStateTests {
    /// What makes the job wait about 30 s: a 503 with Retry-After, or a cut connection and a long
    /// `initial_delay` (then with partial data kept).
    enum WaitCause: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case retryAfter = "503 with Retry-After: 30"
        case backoff = "a dropped connection and initial_delay: 40s"
        var testDescription: String { rawValue }
    }

    @Test("daemon: the waiting job's state file says waiting with retry_at; status --json lists it under waiting",
          arguments: WaitCause.allCases)
    func waitingJobIsWaiting(_ cause: WaitCause) throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(400_000, seed: 9_950)
        switch cause {
        case .retryAfter: server.serve("/w.bin", body: body, faults: [.times(1, .status(code: 503, headers: [("Retry-After", "30")]))])
        case .backoff: server.serve("/w.bin", body: body, faults: [.times(1, .dropAfter(bytes: 100_000))])
        }
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 5, initial_delay: 40s, max_delay: 40s }")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        let began = Date()
        try fixture.drop("w.url", server.url("/w.bin") + "\n")

        #expect(try waitUntil { server.requests(to: "/w.bin").first?.isFinished == true && fixture.stateJSON("w.url")?["retry_at"] != nil },
                "\(fixture.stateJSON("w.url") ?? [:])\n\(fixture.logTail())")
        // The state file is rewritten as the job moves on; give the agent its loop turn.
        _ = try waitUntil(timeout: .seconds(3)) { fixture.stateJSON("w.url")?["state"] as? String == "waiting" }
        let state = try #require(fixture.stateJSON("w.url"))
        #expect(state["state"] as? String == "waiting", "state file: \(state)")
        let retryAt = try #require(state["retry_at"] as? String)
        let due = try #require(ISO8601DateFormatter().date(from: retryAt), "retry_at \(retryAt) is not RFC 3339 UTC")
        #expect(due.timeIntervalSince(began) >= 15, "retry_at \(retryAt) is sooner than the wait")
        #expect(StatusFields.int(state["attempts"]) == 1)

        let report = try fixture.statusReport(config: config)
        #expect(StatusFields.jobs(in: report, "waiting") == ["w.url"], "status --json: \(report)")
        #expect(!StatusFields.jobs(in: report, "active").contains("w.url"), "a waiting job is not active: \(report)")
        let entry = (report["waiting"] as? [[String: Any]])?.first
        #expect(entry?["state"] as? String == "waiting")
        #expect(entry?["retry_at"] as? String == retryAt)

        let text = try fixture.capture(["status"], config: config)
        #expect(text.ending == .exited(0))
        #expect(text.stdout.contains("w.url"), "status does not show the waiting job:\n\(text.stdout)")

        #expect(server.requests(to: "/w.bin").count == 1, "the retry came too soon")
        #expect(try agent.stop() == .exited(0))
    }

    @Test("run --once leaves a job whose retry is due after once_wait in work/, waiting, and exits 75")
    func onceLeavesWaitingJob() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(300_000, seed: 9_951)
        server.serve("/late.bin", body: body, faults: [.times(1, .dropAfter(bytes: 100_000))])
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 5, initial_delay: 60s, max_delay: 60s }",
                                                  "once_wait: 500ms\n")
        try fixture.dropSettled("late.url", server.url("/late.bin") + "\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(75), "\(once)")
        #expect(fixture.jobs(in: "work/test-agent") == ["late.url"])
        let state = fixture.stateJSON("late.url")
        #expect(state?["state"] as? String == "waiting", "\(state ?? [:])")
        #expect(state?["retry_at"] != nil)
        #expect(StatusFields.int(state?["attempts"]) == 1)
        #expect((fixture.fileSize(fixture.partPath("late.bin")) ?? 0) >= 100_000, "the partial data is kept for the retry")
        let report = try fixture.statusReport(config: config)
        #expect(StatusFields.jobs(in: report, "waiting") == ["late.url"], "\(report)")
        #expect(StatusFields.jobs(in: report, "active").isEmpty, "\(report)")
    }

    /// The jobs of one `run --once` and the exit it must give.
    struct ExitCase: Sendable, CustomTestStringConvertible {
        let jobs: [String]
        let exit: Int32
        var testDescription: String { jobs.joined(separator: " + ") + " → \(exit)" }
    }

    @Test("run --once exit precedence: 1 > 75 > 0", arguments: [
        ExitCase(jobs: ["done"], exit: 0),
        ExitCase(jobs: ["done", "waiting"], exit: 75),
        ExitCase(jobs: ["failed", "waiting"], exit: 1),
        ExitCase(jobs: ["done", "failed"], exit: 1),
        ExitCase(jobs: ["done", "failed", "waiting"], exit: 1),
    ])
    func exitPrecedence(_ item: ExitCase) throws {
        let server = try TestHTTPServer()
        server.serve("/done.bin", body: TestHTTPServer.randomBytes(5_000, seed: 9_952))
        server.setFaults("/waiting.bin", [.status(code: 503, headers: [("Retry-After", "3600")])])
        // /failed.bin is not served: 404, which is not retried.
        let fixture = try SpoolFixture(extraConfig: "once_wait: 500ms\n")
        for job in item.jobs { try fixture.dropSettled("\(job).url", server.url("/\(job).bin") + "\n") }

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(item.exit), "\(once)")
        #expect(fixture.jobs(in: "done") == (item.jobs.contains("done") ? ["done.url"] : []))
        #expect(fixture.jobs(in: "failed") == (item.jobs.contains("failed") ? ["failed.url"] : []))
        #expect(fixture.jobs(in: "work/test-agent") == (item.jobs.contains("waiting") ? ["waiting.url"] : []))
    }
}
