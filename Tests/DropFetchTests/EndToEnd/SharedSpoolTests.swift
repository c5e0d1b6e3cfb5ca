import Foundation
import Glibc
import Testing

/// docs/spool.md invariant 7 and the adoption rule (issue 9, item 4): an agent claims at most
/// `claim_ahead` jobs beyond those it runs, so agents sharing a spool share the work; a dead
/// agent's work folder is adopted by a live agent on its rescans, not only when an agent starts.
@Suite("Agents sharing a spool share the work and adopt the dead, end to end", .serialized)
struct SharedSpoolTests {
    static func doneBy(_ fixture: SpoolFixture, _ jobs: [SpoolAudit.ExpectedJob]) -> [String: Int] {
        var byAgent: [String: Int] = [:]
        for job in jobs {
            byAgent[fixture.statusObject("done", job.name)?["agent"] as? String ?? "not done", default: 0] += 1
        }
        return byAgent
    }

    @Test("two agents with total: 2, 60 slow jobs, the second started 1 s later: it does at least a quarter, each job done once")
    func secondAgentGetsItsShare() throws {
        try Self.secondAgentGetsItsShare(try SpoolFixture(), views: (0, 0), scanInterval: "30s", seed: 9_970,
                                         timeout: .seconds(45), label: "shared spool")
    }

    @Test("agent a killed with kill -9 while agent b runs as a daemon (scan_interval: 1s): b adopts a's jobs within 10 s, each done once")
    func liveAgentAdoptsTheDead() throws {
        try Self.liveAgentAdoptsTheDead(try SpoolFixture(), views: (0, 0), scanIntervalA: "30s", acrossMounts: false,
                                        seed: 9_980, finishWithin: .seconds(30), label: "live adoption")
    }

    // MARK: - The scenarios, also run on two mounts of a distributed volume (DistributedTests)

    /// Agents a and b (`total: 2`) on 60 slow jobs, b started a second after a: b does at least a
    /// quarter, each job is done once and fetched once. `views` are the mounts each agent uses.
    static func secondAgentGetsItsShare(_ fixture: SpoolFixture, views: (a: Int, b: Int), scanInterval: String,
                                        seed: UInt64, timeout: Duration, label: String) throws {
        let server = try TestHTTPServer()
        let jobs = MultiAgentTests.serveJobs(60, on: server, delay: .milliseconds(500), seed: seed)
        for job in jobs { try fixture.dropSettled(job.name, server.url(job.path) + "\n") }
        let limits = "concurrency: { total: 2, per_host: 2 }\n"
        let configA = try fixture.writeAgentConfig(agentID: "a", view: views.a, scanInterval: scanInterval, limits)
        let configB = try fixture.writeAgentConfig(agentID: "b", view: views.b, scanInterval: scanInterval, limits)
        let logB = fixture.root.path + "/agent-b.log"

        let agentA = try AgentProcess(["run"], config: configA, log: fixture.logPath, in: fixture)
        try agentA.start()
        let started = ContinuousClock.now
        #expect(try waitUntil { !server.requests.isEmpty }, "agent a does not start: \(fixture.logTail())")
        // The scenario: the second agent comes up a second after the first.
        let left = .seconds(1) - (ContinuousClock.now - started)
        if left > .zero { Thread.sleep(forTimeInterval: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18) }
        let agentB = try AgentProcess(["run"], config: configB, log: logB, in: fixture)
        try agentB.start()

        #expect(try waitUntil(timeout: timeout) { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count >= jobs.count },
                "done: \(fixture.jobs(in: "done").count)\n\(fixture.logTail())\n\(MultiAgentTests.text(logB))")
        #expect(try agentA.stop() == .exited(0))
        #expect(try agentB.stop() == .exited(0))

        let byAgent = doneBy(fixture, jobs)
        print("\(label), 60 slow jobs: \(byAgent.sorted { $0.key < $1.key }) in \(CrashMatrixTests.seconds(ContinuousClock.now - started)) s")
        #expect((byAgent["b"] ?? 0) >= 15, "the second agent did \(byAgent["b"] ?? 0) of 60: \(byAgent)")
        #expect(fixture.jobs(in: "failed").isEmpty)
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        let fetches = MultiAgentTests.wholeFetches(server.completedRequests(), jobs: jobs)
        #expect(fetches.values.allSatisfy { $0 == 1 }, "fetched twice: \(fetches.filter { $0.value > 1 })")
    }

    /// Agent b (`scan_interval: 1s`) runs and has done a job; while it is stopped, agent a claims
    /// and starts 12 slow jobs and is killed with kill -9; b, continued, adopts a's jobs within
    /// 10 s, and each job is done once, by b where a had claimed it. `acrossMounts`: a file dropped
    /// through one mount is not seen by the other's inotify, so drops are settled for the rescans.
    static func liveAgentAdoptsTheDead(_ fixture: SpoolFixture, views: (a: Int, b: Int), scanIntervalA: String,
                                       acrossMounts: Bool, seed: UInt64, finishWithin: Duration, label: String) throws {
        let server = try TestHTTPServer()
        let jobs = (0..<12).map { index -> SpoolAudit.ExpectedJob in
            let body = TestHTTPServer.randomBytes(120_000 + index * 1_000, seed: seed + UInt64(index))
            let path = String(format: "/g/g%02d.bin", index)
            server.serve(path, body: body, faults: [.drip(bytesPerChunk: 20_000, interval: .milliseconds(100))])
            return SpoolAudit.ExpectedJob(name: String(format: "g%02d.url", index), path: path,
                                          file: String(format: "g%02d.bin", index), body: body)
        }
        let configA = try fixture.writeAgentConfig(agentID: "a", view: views.a, scanInterval: scanIntervalA,
                                                   "concurrency: { total: 2, per_host: 2 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", view: views.b, scanInterval: "1s",
                                                   "concurrency: { total: 4, per_host: 4 }\n")
        let logB = fixture.root.path + "/agent-b.log"

        // Agent b is up and past its start-up recovery: it has done a job of its own.
        let agentB = try AgentProcess(["run"], config: configB, log: logB, in: fixture)
        try agentB.start()
        let warmUp = TestHTTPServer.randomBytes(1_000, seed: seed - 1)
        server.serve("/g/warm.bin", body: warmUp)
        if acrossMounts {
            try fixture.dropSettled("warm.url", server.url("/g/warm.bin") + "\n")
        } else {
            try fixture.drop("warm.url", server.url("/g/warm.bin") + "\n")
        }
        #expect(try waitUntil { fixture.jobs(in: "done") == ["warm.url"] }, "\(MultiAgentTests.text(logB))")

        // While b is stopped (a busy host), agent a claims jobs and starts them; then it dies.
        #expect(kill(agentB.pid, SIGSTOP) == 0)
        defer { kill(agentB.pid, SIGCONT) }
        let agentA = try AgentProcess(["run"], config: configA, log: fixture.logPath, in: fixture)
        try agentA.start()
        for job in jobs { try fixture.drop(job.name, server.url(job.path) + "\n") }
        let running = try waitUntil {
            fixture.destinationNames().filter { $0.hasSuffix(".part") && (fixture.fileSize(fixture.destination + "/" + $0) ?? 0) > 0 }.count >= 2
        }
        try #require(running, "agent a did not start two transfers: \(fixture.logTail())")
        #expect(agentA.kill() == .signalled(SIGKILL))
        let orphaned = fixture.jobs(in: "work/a")
        try #require(!orphaned.isEmpty, "agent a left no job in work/a: the case was not exercised")
        if acrossMounts {
            // The jobs still in the inbox were dropped just now: b's scans take them once settled.
            for name in fixture.jobs(in: "inbox") { try SpoolFixture.backdate(fixture.spool + "/inbox/" + name, seconds: 60) }
        }
        #expect(kill(agentB.pid, SIGCONT) == 0)
        let killed = ContinuousClock.now

        let all = jobs.count + 1
        let adopted = try waitUntil(timeout: .seconds(10)) {
            orphaned.allSatisfy { fixture.jobs(in: "done").contains($0) }
        }
        let late = "work/a \(fixture.jobs(in: "work/a")), done \(fixture.jobs(in: "done").count)\n\(MultiAgentTests.text(logB))"
        #expect(adopted, "10 s after the kill, a's jobs \(orphaned) are not all done: \(late)")
        guard adopted else {
            #expect(try agentB.stop() == .exited(0))
            return
        }
        #expect(try waitUntil(timeout: finishWithin) { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count >= all },
                "done: \(fixture.jobs(in: "done").count) of \(all)\n\(MultiAgentTests.text(logB))")
        print("\(label): \(orphaned.count) orphaned jobs, all done \(CrashMatrixTests.seconds(ContinuousClock.now - killed)) s after the kill")
        #expect(agentB.isRunning)
        #expect(try agentB.stop() == .exited(0))

        for name in orphaned { #expect(fixture.statusObject("done", name)?["agent"] as? String == "b", "\(name)") }
        let expected = jobs + [SpoolAudit.ExpectedJob(name: "warm.url", path: "/g/warm.bin", file: "warm.bin", body: warmUp)]
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: expected)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        #expect(fixture.names(in: "work/a").filter { $0 != ".lock" && $0 != ".lease" }.isEmpty, "work/a: \(fixture.names(in: "work/a"))")
    }
}
