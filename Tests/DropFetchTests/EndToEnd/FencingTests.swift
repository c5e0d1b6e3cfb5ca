@testable import DropFetch
import Foundation
import Glibc
import Testing

/// Fencing (issue 37, DESIGN.md §10): an agent whose lease renewal ends late — here because its
/// process was stopped with SIGSTOP for longer than `lease: 2s` — stops acting on its jobs (one
/// `fenced:` warning); a daemon then re-joins as a new agent and finishes them, `run --once`
/// exits 75 leaving them in its work folder. Another agent never adopts the jobs of an agent
/// whose lock is held, and distrusts the partial data of an owner it cannot prove gone.
@Suite("Fencing: a stopped agent loses its lease, end to end", .serialized)
struct FencingTests {
    /// Longer than `lease: 2s` and its renewal every 0.5 s: the renewal after it ends late.
    static let stopped: TimeInterval = 5

    /// `count` jobs `fNN.url` for `/f/fNN.bin` of `size` bytes, each answer dripping 32 KB every 100 ms.
    static func serveSlowJobs(_ count: Int, size: Int, on server: TestHTTPServer, seed: UInt64) -> [SpoolAudit.ExpectedJob] {
        (0..<count).map { index in
            let body = TestHTTPServer.randomBytes(size + index * 1_000, seed: seed + UInt64(index))
            let path = String(format: "/f/f%02d.bin", index)
            server.serve(path, body: body, faults: [.drip(bytesPerChunk: 32_768, interval: .milliseconds(100))])
            return SpoolAudit.ExpectedJob(name: String(format: "f%02d.url", index), path: path,
                                          file: String(format: "f%02d.bin", index), body: body)
        }
    }

    /// The `.part` files in the destination that hold data: transfers that are running.
    static func growingParts(_ fixture: SpoolFixture) -> Int {
        fixture.destinationNames().filter { $0.hasSuffix(".part") && (fixture.fileSize(fixture.destination + "/" + $0) ?? 0) > 0 }.count
    }

    /// The log lines of `path` (logfmt) whose `msg` starts with `prefix`.
    static func messages(_ path: String, startingWith prefix: String) -> [LogfmtLine] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? LogfmtLine(String($0)) }
            .filter { $0["msg"]?.hasPrefix(prefix) == true }
    }

    /// The lease record in `work/<agent>/.lease`.
    static func lease(_ fixture: SpoolFixture, agent: String) -> WorkLease.Record? {
        FileManager.default.contents(atPath: fixture.spool + "/work/\(agent)/.lease").flatMap { WorkLease.Record.parse(Array($0)) }
    }

    /// Stops `pid` with SIGSTOP for `stopped` seconds (the wait is the scenario), then continues it.
    static func freeze(_ pid: Int32, for seconds: TimeInterval = stopped) {
        #expect(kill(pid, SIGSTOP) == 0)
        Thread.sleep(forTimeInterval: seconds)
        #expect(kill(pid, SIGCONT) == 0)
    }

    @Test("a daemon stopped for 5 s (lease: 2s) mid-transfer is fenced once, re-joins once, and files every job once with its bytes")
    func daemonIsFencedAndRejoins() throws {
        let server = try TestHTTPServer()
        let jobs = Self.serveSlowJobs(6, size: 900_000, on: server, seed: 37_100)
        let fixture = try SpoolFixture()
        // Outside the fixture's root: the audit flags any file there but the spool, destination, configs and logs.
        let metricsFolder = FileManager.default.temporaryDirectory.path + "/dropfetch-fence-metrics-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: metricsFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: metricsFolder) }
        let metrics = metricsFolder + "/dropfetch.prom"
        let config = try fixture.writeAgentConfig(agentID: "a", "lease: 2s\nconcurrency: { total: 4, per_host: 4 }\nmetrics_file: \(metrics)\n")
        for job in jobs { try fixture.dropSettled(job.name, server.url(job.path) + "\n") }
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        defer { kill(agent.pid, SIGCONT) }
        #expect(try waitUntil { Self.lease(fixture, agent: "a")?.epoch == 1 }, "\(fixture.logTail())")
        try #require(try waitUntil { Self.growingParts(fixture) >= 3 }, "no transfers running: \(fixture.logTail())")

        Self.freeze(agent.pid)

        #expect(try waitUntil(timeout: .seconds(60)) { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count >= jobs.count },
                "done: \(fixture.jobs(in: "done")), work/a: \(fixture.jobs(in: "work/a"))\n\(fixture.logTail())")
        #expect(agent.isRunning, "the daemon ended: \(fixture.logTail())")
        let fenced = Self.messages(fixture.logPath, startingWith: "fenced: ")
        #expect(fenced.count == 1, "\(fenced)")
        #expect(fenced.first?["level"] == "warning", "\(fenced)")
        let rejoined = Self.messages(fixture.logPath, startingWith: "re-joined the spool: ")
        #expect(rejoined.count == 1, "\(rejoined)\n\(fixture.logTail())")
        #expect(rejoined.first?["level"] == "info", "\(rejoined)")

        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems)\n\(fixture.log)")
        #expect(fixture.jobs(in: "done").count == jobs.count, "\(fixture.jobs(in: "done"))")
        for job in jobs {
            let status = fixture.statusObject("done", job.name)
            #expect(status?["agent"] as? String == "a", "\(job.name)")
            let sha = StatusFields.downloads(status).first?["sha256"] as? String
            #expect(sha == job.sha256, "\(job.name)")
        }
        // The counters of the fenced agent reach the one that re-joined; the gauge is down again.
        let settled = try waitUntil(timeout: .seconds(10)) {
            guard let text = try? Metrics(metrics) else { return false }
            return text["dropfetch_fenced_total"] == 1 && text["dropfetch_fenced"] == 0
        }
        let text = (try? Metrics(metrics).text) ?? "no metrics file"
        #expect(settled, "\(text)")
        #expect(text.contains(#"dropfetch_fenced_total{agent="a"} 1"#), "\(text)")
        #expect(text.contains(#"dropfetch_fenced{agent="a"} 0"#), "\(text)")
        #expect(Self.lease(fixture, agent: "a")?.epoch == 2, "\(String(describing: Self.lease(fixture, agent: "a")))")

        #expect(try agent.stop() == .exited(0), "\(fixture.logTail())")
    }

    @Test("run --once stopped for 5 s (lease: 2s) mid-transfer exits 75 leaving its jobs in work/; the next run --once files them")
    func onceRunIsFencedAndExits75() throws {
        let server = try TestHTTPServer()
        let jobs = Self.serveSlowJobs(4, size: 1_200_000, on: server, seed: 37_200)
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "a", "lease: 2s\nconcurrency: { total: 4, per_host: 4 }\n")
        for job in jobs { try fixture.dropSettled(job.name, server.url(job.path) + "\n") }
        let once = try AgentProcess(["run", "--once"], config: config, log: fixture.logPath, in: fixture)
        try once.start()
        defer { kill(once.pid, SIGCONT) }
        try #require(try waitUntil { Self.growingParts(fixture) >= jobs.count }, "not all transfers running: \(fixture.logTail())")

        Self.freeze(once.pid)

        #expect(try once.wait(timeout: .seconds(30)) == .exited(75), "\(fixture.logTail())")
        let fenced = Self.messages(fixture.logPath, startingWith: "fenced: ")
        #expect(fenced.count == 1, "\(fenced)\n\(fixture.logTail())")
        #expect(fixture.jobs(in: "work/a") == jobs.map(\.name), "work/a: \(fixture.names(in: "work/a"))")
        #expect(fixture.names(in: "done").isEmpty && fixture.names(in: "failed").isEmpty,
                "done: \(fixture.names(in: "done")), failed: \(fixture.names(in: "failed"))")
        let published = fixture.destinationNames().filter { !$0.hasPrefix(".") }
        #expect(published.isEmpty, "published by a fenced agent: \(published)")

        let again = try AgentProcess.run(["run", "--once"], config: config, log: fixture.logPath, in: fixture, timeout: .seconds(60))
        #expect(again == .exited(0), "\(fixture.logTail())")
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems)\n\(fixture.logTail())")
        for job in jobs {
            let sha = StatusFields.downloads(fixture.statusObject("done", job.name)).first?["sha256"] as? String
            #expect(sha == job.sha256, "\(job.name)")
        }
        #expect(Self.messages(fixture.logPath, startingWith: "fenced: ").count == 1, "the second run was fenced too")
        #expect(Self.lease(fixture, agent: "a")?.epoch == 2)
    }

    @Test("agent a stopped for longer than lease + margin while agent b scans every second: b adopts nothing (a's lock is held); a finishes all")
    func heldLockIsNeverAdopted() throws {
        let server = try TestHTTPServer()
        let jobs = Self.serveSlowJobs(4, size: 1_200_000, on: server, seed: 37_300)
        let fixture = try SpoolFixture()
        let configA = try fixture.writeAgentConfig(agentID: "a", "lease: 2s\nconcurrency: { total: 4, per_host: 4 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", scanInterval: "1s", "lease: 2s\nconcurrency: { total: 4, per_host: 4 }\n")
        let logB = fixture.root.path + "/agent-b.log"
        for job in jobs { try fixture.dropSettled(job.name, server.url(job.path) + "\n") }

        let agentA = try AgentProcess(["run"], config: configA, log: fixture.logPath, in: fixture)
        try agentA.start()
        defer { kill(agentA.pid, SIGCONT) }
        try #require(try waitUntil { fixture.jobs(in: "work/a").count == jobs.count && Self.growingParts(fixture) >= jobs.count },
                     "agent a did not start all its jobs: \(fixture.logTail())")
        let agentB = try AgentProcess(["run"], config: configB, log: logB, in: fixture)
        try agentB.start()
        #expect(try waitUntil { Self.lease(fixture, agent: "b")?.epoch == 1 && !Self.messages(logB, startingWith: "agent started").isEmpty },
                "\(MultiAgentTests.text(logB))")

        // lease 2 s + margin 2 s, and three more of b's 1 s scans.
        Self.freeze(agentA.pid, for: 7)
        let heldBack = fixture.jobs(in: "work/a")

        #expect(try waitUntil(timeout: .seconds(60)) { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count >= jobs.count },
                "done: \(fixture.jobs(in: "done"))\n\(fixture.logTail())\n\(MultiAgentTests.text(logB))")
        #expect(agentA.isRunning && agentB.isRunning)
        #expect(try agentA.stop() == .exited(0))
        #expect(try agentB.stop() == .exited(0))

        #expect(heldBack == jobs.map(\.name), "while a was stopped its jobs left work/a: \(heldBack)")
        #expect(Self.messages(logB, startingWith: "adopted ").isEmpty, "\(MultiAgentTests.text(logB))")
        #expect(fixture.jobs(in: "work/b").isEmpty)
        for job in jobs { #expect(fixture.statusObject("done", job.name)?["agent"] as? String == "a", "\(job.name)") }
        #expect(Self.messages(fixture.logPath, startingWith: "fenced: ").count == 1, "\(fixture.logTail())")
        #expect(Self.messages(fixture.logPath, startingWith: "re-joined the spool: ").count == 1, "\(fixture.logTail())")
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems)\n\(fixture.log)")
    }

    @Test("a's lease names another host (its process cannot be proved gone): b adopts a's jobs only after lease + margin and restarts them from 0")
    func ownerElsewhereIsAdoptedLateAndDistrusted() throws {
        let server = try TestHTTPServer()
        let jobs = Self.serveSlowJobs(2, size: 1_200_000, on: server, seed: 37_400)
        let fixture = try SpoolFixture()
        let configA = try fixture.writeAgentConfig(agentID: "a", "lease: 2s\nconcurrency: { total: 2, per_host: 2 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", scanInterval: "1s", "lease: 2s\n")
        let logB = fixture.root.path + "/agent-b.log"

        for job in jobs { try fixture.dropSettled(job.name, server.url(job.path) + "\n") }
        let agentA = try AgentProcess(["run"], config: configA, log: fixture.logPath, in: fixture)
        try agentA.start()
        try #require(try waitUntil { fixture.jobs(in: "work/a").count == jobs.count && Self.growingParts(fixture) >= jobs.count },
                     "agent a did not start its jobs: \(fixture.logTail())")
        // b comes up while a holds its lock: its start-up recovery leaves work/a alone.
        let agentB = try AgentProcess(["run"], config: configB, log: logB, in: fixture)
        try agentB.start()
        defer { kill(agentB.pid, SIGCONT) }
        #expect(try waitUntil { !Self.messages(logB, startingWith: "agent started").isEmpty }, "\(MultiAgentTests.text(logB))")
        // b is held for the moment a dies and its lease is made to read as another host's, so
        // that b never sees the lease of a gone process of this host.
        #expect(kill(agentB.pid, SIGSTOP) == 0)
        #expect(agentA.kill() == .signalled(SIGKILL))
        let parts = jobs.map { fixture.fileSize(fixture.partPath($0.file)) ?? 0 }
        #expect(parts.allSatisfy { $0 > 0 }, "\(parts)")
        var record = try #require(Self.lease(fixture, agent: "a"))
        record.boot = "00000000-0000-4000-8000-000000000000"
        record.host = "elsewhere"
        try Data(record.encoded()).write(to: URL(fileURLWithPath: fixture.spool + "/work/a/.lease"))
        let before = server.requests.count
        #expect(kill(agentB.pid, SIGCONT) == 0)
        let continued = ContinuousClock.now

        let adopted = try waitUntil(timeout: .seconds(30)) { fixture.jobs(in: "work/a").isEmpty }
        let waited = ContinuousClock.now - continued
        #expect(adopted, "\(MultiAgentTests.text(logB))")
        // b first sees the free lock at its next scan, at the earliest when continued (its clock in whole
        // milliseconds): the lease runs out 2 s + 2 s after that.
        #expect(waited >= .milliseconds(3_990), "adopted \(waited) after b continued: sooner than lease + margin")
        #expect(try waitUntil(timeout: .seconds(60)) { fixture.jobs(in: "done").count >= jobs.count }, "\(MultiAgentTests.text(logB))")
        #expect(try agentB.stop() == .exited(0))

        // One line per adopted job, naming a and saying its partial data is not trusted.
        let adoptions = Self.messages(logB, startingWith: "adopted a job of agent a")
        #expect(Set(adoptions.compactMap { $0["job"] }) == Set(jobs.map(\.name)), "\(adoptions)")
        #expect(adoptions.count == jobs.count && adoptions.allSatisfy { $0["partial_data"]?.hasPrefix("not trusted") == true },
                "\(adoptions)")
        for request in server.requests.dropFirst(before) {
            #expect(request.header("Range") == nil, "b resumed \(request.path) from data a may still write: \(request.header("Range") ?? "")")
        }
        for job in jobs {
            let status = fixture.statusObject("done", job.name)
            #expect(status?["agent"] as? String == "b", "\(job.name)")
            #expect(StatusFields.downloads(status).first?["sha256"] as? String == job.sha256, "\(job.name)")
        }
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test("an idle daemon (lease: 1s) lets its lease lapse and is not shown fenced; a job dropped then takes the lease again and is done")
    func idleDaemonLetsItsLeaseLapse() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(300_000, seed: 34_500)
        server.serve("/idle.bin", body: body)
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "a", "lease: 1s\n")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        defer { _ = try? agent.stop() }
        let leasePath = fixture.spool + "/work/a/.lease"
        #expect(try waitUntil(timeout: .seconds(10)) { Self.lease(fixture, agent: "a")?.idle == true }, "\(fixture.logTail())")
        let lapsed = try #require(Self.lease(fixture, agent: "a"))
        // Past the lease and its 2 s margin, as another agent or `status` counts it from the file's time.
        let written = try #require(try FileManager.default.attributesOfItem(atPath: leasePath)[.modificationDate] as? Date)
        #expect(try waitUntil(timeout: .seconds(10)) { Date().timeIntervalSince(written) > 3.5 })
        #expect(Self.lease(fixture, agent: "a") == lapsed, "an idle agent renewed its lease")
        let report = try fixture.statusReport(config: config)
        #expect((report["fenced_agents"] as? [Any])?.isEmpty == true, "\(report)")

        try fixture.drop("idle.url", server.url("/idle.bin") + "\n")
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done").contains("idle.url") }, "\(fixture.logTail())")
        let status = fixture.statusObject("done", "idle.url")
        #expect(status?["state"] as? String == "done" && status?["agent"] as? String == "a", "\(String(describing: status))")
        let file = try #require(StatusFields.firstDownload(status)["file"] as? String)
        #expect(FileManager.default.contents(atPath: file).map(Array.init) == body)
        #expect(StatusFields.firstDownload(status)["sha256"] as? String == TestHTTPServer.sha256Hex(body))
        // The lease was taken again for the job (same epoch: no re-join), then lapses again.
        #expect(try waitUntil(timeout: .seconds(10)) {
            guard let now = Self.lease(fixture, agent: "a") else { return false }
            return now.idle && now.renewal >= lapsed.renewal + 2
        }, "\(String(describing: Self.lease(fixture, agent: "a")))")
        #expect(Self.lease(fixture, agent: "a")?.epoch == lapsed.epoch)
        #expect(agent.isRunning)
        #expect(try agent.stop() == .exited(0))
        #expect(Self.messages(fixture.logPath, startingWith: "fenced: ").isEmpty, "\(fixture.logTail())")
        #expect(fixture.jobs(in: "work/a").isEmpty)
    }

    @Test("dropfetch check refuses lease: 500ms with the config's file:line:col and exits 2")
    func checkRefusesShortLease() throws {
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "a", "lease: 500ms\n")
        let result = try fixture.capture(["check"], config: config)
        #expect(result.ending == .exited(2), "\(result)")
        #expect(result.stderr.contains("config-a.yaml:7:8: lease: must be at least 1s, got 500ms"), "\(result)")
    }
}
