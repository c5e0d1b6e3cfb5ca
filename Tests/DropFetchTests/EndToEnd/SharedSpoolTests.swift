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
        let server = try TestHTTPServer()
        let jobs = MultiAgentTests.serveJobs(60, on: server, delay: .milliseconds(500), seed: 9_970)
        let fixture = try SpoolFixture()
        for job in jobs { try fixture.dropSettled(job.name, server.url(job.path) + "\n") }
        let configA = try fixture.writeAgentConfig(agentID: "a", "concurrency: { total: 2, per_host: 2 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", "concurrency: { total: 2, per_host: 2 }\n")
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

        #expect(try waitUntil(timeout: .seconds(45)) { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count >= jobs.count },
                "done: \(fixture.jobs(in: "done").count)\n\(fixture.logTail())")
        #expect(try agentA.stop() == .exited(0))
        #expect(try agentB.stop() == .exited(0))

        let byAgent = Self.doneBy(fixture, jobs)
        print("shared spool, 60 slow jobs: \(byAgent.sorted { $0.key < $1.key }) in \(CrashMatrixTests.seconds(ContinuousClock.now - started)) s")
        #expect((byAgent["b"] ?? 0) >= 15, "the second agent did \(byAgent["b"] ?? 0) of 60: \(byAgent)")
        #expect(fixture.jobs(in: "failed").isEmpty)
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        let fetches = MultiAgentTests.wholeFetches(server.completedRequests(), jobs: jobs)
        #expect(fetches.values.allSatisfy { $0 == 1 }, "fetched twice: \(fetches.filter { $0.value > 1 })")
    }

    @Test("agent a killed with kill -9 while agent b runs as a daemon (scan_interval: 1s): b adopts a's jobs within 10 s, each done once")
    func liveAgentAdoptsTheDead() throws {
        let server = try TestHTTPServer()
        let jobs = (0..<12).map { index -> SpoolAudit.ExpectedJob in
            let body = TestHTTPServer.randomBytes(120_000 + index * 1_000, seed: 9_980 + UInt64(index))
            let path = String(format: "/g/g%02d.bin", index)
            server.serve(path, body: body, faults: [.drip(bytesPerChunk: 20_000, interval: .milliseconds(100))])
            return SpoolAudit.ExpectedJob(name: String(format: "g%02d.url", index), path: path,
                                          file: String(format: "g%02d.bin", index), body: body)
        }
        let fixture = try SpoolFixture()
        let configA = try fixture.writeAgentConfig(agentID: "a", "concurrency: { total: 2, per_host: 2 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", "concurrency: { total: 4, per_host: 4 }\n")
        // writeAgentConfig sets scan_interval: 30s; agent b's is 1s.
        let textB = try String(contentsOfFile: configB, encoding: .utf8).replacingOccurrences(of: "scan_interval: 30s", with: "scan_interval: 1s")
        try textB.write(toFile: configB, atomically: true, encoding: .utf8)
        let logB = fixture.root.path + "/agent-b.log"

        // Agent b is up and past its start-up recovery: it has done a job of its own.
        let agentB = try AgentProcess(["run"], config: configB, log: logB, in: fixture)
        try agentB.start()
        let warmUp = TestHTTPServer.randomBytes(1_000, seed: 9_979)
        server.serve("/g/warm.bin", body: warmUp)
        try fixture.drop("warm.url", server.url("/g/warm.bin") + "\n")
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
        #expect(try waitUntil(timeout: .seconds(30)) { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count >= all },
                "done: \(fixture.jobs(in: "done").count) of \(all)")
        print("live adoption: \(orphaned.count) orphaned jobs, all done \(CrashMatrixTests.seconds(ContinuousClock.now - killed)) s after the kill")
        #expect(agentB.isRunning)
        #expect(try agentB.stop() == .exited(0))

        for name in orphaned { #expect(fixture.statusObject("done", name)?["agent"] as? String == "b", "\(name)") }
        let expected = jobs + [SpoolAudit.ExpectedJob(name: "warm.url", path: "/g/warm.bin", file: "warm.bin", body: warmUp)]
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: expected)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        #expect(fixture.names(in: "work/a").filter { $0 != ".lock" }.isEmpty, "work/a: \(fixture.names(in: "work/a"))")
    }
}
