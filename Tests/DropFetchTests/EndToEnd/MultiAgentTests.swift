import DropFetch
import Foundation
import Glibc
import Testing

/// Several agents on one spool (docs/spool.md, claim protocol): every job is done exactly once,
/// and a dead agent's work folder is adopted by a live one.
@Suite("Several agents on one spool, end to end", .serialized)
struct MultiAgentTests {
    /// `count` jobs `pNNN.url` for `/p/pNNN.bin`, 2–20 KB each, every answer delayed by `delay`.
    static func serveJobs(_ count: Int, on server: TestHTTPServer, delay: Duration, seed: UInt64) -> [SpoolAudit.ExpectedJob] {
        (0..<count).map { index in
            let body = TestHTTPServer.randomBytes(2_000 + (index * 937) % 18_000, seed: seed &+ UInt64(index))
            let path = String(format: "/p/p%03d.bin", index)
            server.serve(path, body: body, faults: [.delay(delay)])
            return SpoolAudit.ExpectedJob(name: String(format: "p%03d.url", index), path: path,
                                          file: String(format: "p%03d.bin", index), body: body)
        }
    }

    /// Whole-body 200 answers per path, for "no file fetched completely twice".
    static func wholeFetches(_ log: [TestHTTPServer.LoggedRequest], jobs: [SpoolAudit.ExpectedJob]) -> [String: Int] {
        let sizes = Dictionary(jobs.map { ($0.path, $0.body.count) }) { first, _ in first }
        var counts: [String: Int] = [:]
        for request in log where request.status == 200 && request.bodyBytesSent == sizes[request.path] {
            counts[request.path, default: 0] += 1
        }
        return counts
    }

    @Test("a daemon (agent a) and run --once (agent b) started together on 200 jobs: each done exactly once, by both")
    func twoAgentsShareOneSpool() throws {
        let began = ContinuousClock.now
        let server = try TestHTTPServer()
        let jobs = Self.serveJobs(200, on: server, delay: .milliseconds(15), seed: 9_100)
        let fixture = try SpoolFixture()
        // Claiming is eager: an agent takes every job it sees at start. 24 KB of comment lines per
        // job file make each claim cost a parse, so the claim loops of agents started together
        // overlap for a few hundred milliseconds and they compete for each job.
        let padding = String(repeating: "# a comment line that makes the job file slower to claim ...........\n", count: 350)
        for job in jobs { try fixture.drop(job.name, padding + server.url(job.path) + "\n") }
        let configA = try fixture.writeAgentConfig(agentID: "a")
        let configB = try fixture.writeAgentConfig(agentID: "b")
        let logA = fixture.root.path + "/agent-a.log"
        let logB = fixture.root.path + "/agent-b.log"

        let daemon = try AgentProcess(["run"], config: configA, log: logA, in: fixture, heldAtStart: true)
        let once = try AgentProcess(["run", "--once"], config: configB, log: logB, in: fixture, heldAtStart: true)
        try daemon.start()
        try once.start()
        try daemon.release()
        try once.release()

        #expect(try once.wait(timeout: .seconds(60)) == .exited(0), "\(Self.text(logB))")
        #expect(try waitUntil(timeout: .seconds(60)) { fixture.jobs(in: "done").count >= jobs.count },
                "done: \(fixture.jobs(in: "done").count)\n\(Self.text(logA))")
        #expect(try daemon.stop() == .exited(0))

        #expect(fixture.jobs(in: "done").count == 200)
        #expect(fixture.jobs(in: "done").allSatisfy { SpoolAudit.jobName(ofRecord: $0) == $0 }, "a job was filed twice")
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        let fetches = Self.wholeFetches(server.completedRequests(), jobs: jobs)
        #expect(fetches.count == 200 && fetches.values.allSatisfy { $0 == 1 },
                "fetched twice: \(fetches.filter { $0.value > 1 })")

        var byAgent: [String: Int] = [:]
        for job in jobs { byAgent[(try? fixture.status("done", job.name))?.agent ?? "?", default: 0] += 1 }
        print("two agents on one spool: \(byAgent.sorted { $0.key < $1.key }) in \(CrashMatrixTests.seconds(ContinuousClock.now - began)) s")
        #expect(Set(byAgent.keys) == ["a", "b"], "both agents should have done some of the jobs: \(byAgent)")
        #expect(server.maxConcurrentRequests > 2, "per_host is 2 per agent: the two agents never downloaded at once")
    }

    @Test("kill -9 of agent a mid-transfer: agent b adopts work/a, resumes the .part, finishes every job as b")
    func deadAgentIsAdopted() throws {
        let server = try TestHTTPServer()
        let big = TestHTTPServer.randomBytes(2_000_000, seed: 9_200)
        let medium = TestHTTPServer.randomBytes(300_000, seed: 9_201)
        let small = TestHTTPServer.randomBytes(20_000, seed: 9_202)
        server.serve("/a/big.bin", body: big, faults: [.times(1, .drip(bytesPerChunk: 64_000, interval: .milliseconds(50)))])
        server.serve("/a/medium.bin", body: medium, faults: [.times(1, .drip(bytesPerChunk: 10_000, interval: .milliseconds(50)))])
        server.serve("/a/small.bin", body: small)
        let jobs = [
            SpoolAudit.ExpectedJob(name: "big.url", path: "/a/big.bin", file: "big.bin", body: big),
            SpoolAudit.ExpectedJob(name: "medium.url", path: "/a/medium.bin", file: "medium.bin", body: medium),
            SpoolAudit.ExpectedJob(name: "small.url", path: "/a/small.bin", file: "small.bin", body: small),
        ]
        let fixture = try SpoolFixture()
        let configA = try fixture.writeAgentConfig(agentID: "a", "concurrency: { total: 2, per_host: 2 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b")
        let agentA = try AgentProcess(["run"], config: configA, log: fixture.logPath, in: fixture)
        try agentA.start()
        for job in jobs { try fixture.drop(job.name, server.url(job.path) + "\n") }
        let part = fixture.destination + "/.big.bin.part"
        #expect(try waitUntil { (fixture.fileSize(part) ?? 0) >= 300_000 }, "\(fixture.log)")
        #expect(try waitUntil { (CrashSnapshot.resumableBytes(part: part, size: fixture.fileSize(part) ?? 0) ?? 0) > 0 })
        #expect(agentA.kill() == .signalled(SIGKILL))
        #expect(fixture.jobs(in: "work/a") == ["big.url", "medium.url"],
                "small waits in the inbox behind the two running jobs (total: 2)")
        #expect(fixture.jobs(in: "inbox") == ["small.url"])
        // What the resume record counts as durable is what may be resumed.
        let saved = try #require(CrashSnapshot.resumableBytes(part: part, size: fixture.fileSize(part) ?? 0))
        let before = server.completedRequests().count

        #expect(try AgentProcess.run(["run", "--once"], config: configB, log: fixture.logPath, in: fixture) == .exited(0),
                "\(fixture.log)")

        #expect(fixture.jobs(in: "done") == ["big.url", "medium.url", "small.url"])
        for job in jobs { #expect(try fixture.status("done", job.name).agent == "b") }
        #expect(fixture.names(in: "work/a").filter { $0 != ".lock" && $0 != ".lease" }.isEmpty, "work/a: \(fixture.names(in: "work/a"))")
        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems)")
        let resumed = server.completedRequests().dropFirst(before).filter { $0.path == "/a/big.bin" }
        #expect(resumed.map(\.status) == [206])
        #expect(resumed.first?.header("Range") == "bytes=\(saved)-")
        #expect(try fixture.status("done", "big.url").downloads.first?.resumedFrom == Int64(saved))
    }

    /// Agent a crashes at `agentA`; agent b adopts its work folder, itself crashing first at
    /// `agentB` when given.
    struct AdoptionCase: Sendable, CustomTestStringConvertible {
        let agentA: String
        var agentB: String?
        var testDescription: String { "a dies at \(agentA)" + (agentB.map { ", b at \($0)" } ?? "") }
    }

    @Test("agent a dies at a crash point, agent b adopts work/a: every job filed once, finished filings completed, no refetch",
          .bug(id: "adopted-filing", "b filed a's half-filed job again as x.1.url beside a's orphan status file"),
          arguments: [
              AdoptionCase(agentA: "status-written:1"), AdoptionCase(agentA: "status-written:2"),
              AdoptionCase(agentA: "published:1"), AdoptionCase(agentA: "claimed:2"),
              AdoptionCase(agentA: "mid-transfer:3"), AdoptionCase(agentA: "mid-transfer:3", agentB: "recovery:1"),
          ])
    func adoptionAfterCrash(_ crash: AdoptionCase) throws {
        let server = try TestHTTPServer()
        let jobs = Self.serveJobs(4, on: server, delay: .zero, seed: 9_300)
        let fixture = try SpoolFixture()
        for job in jobs { try fixture.drop(job.name, server.url(job.path) + "\n") }
        let configA = try fixture.writeAgentConfig(agentID: "a")
        let configB = try fixture.writeAgentConfig(agentID: "b")

        let crashed = try AgentProcess.run(["run", "--once"], config: configA, environment: ["DROPFETCH_CRASH_AT": crash.agentA],
                                           log: fixture.logPath, in: fixture)
        #expect(crashed == .signalled(SIGKILL), "\(fixture.log)")
        let audit = SpoolAudit(fixture: fixture)
        let snapshot = CrashSnapshot(audit: audit, jobs: jobs, requestCount: server.completedRequests().count)
        #expect(!fixture.jobs(in: "work/a").isEmpty)
        let statusesBefore = Set(fixture.names(in: "done").filter { $0.hasSuffix(".status.json") })
        if let point = crash.agentB {
            let ending = try AgentProcess.run(["run", "--once"], config: configB, environment: ["DROPFETCH_CRASH_AT": point],
                                              log: fixture.logPath, in: fixture)
            #expect(ending == .signalled(SIGKILL), "\(fixture.log)")
            var checked = Set<String>()
            let instant = audit.instantProblems(dropped: jobs, checked: &checked)
            #expect(instant.isEmpty, "\(instant)")
        }
        #expect(try AgentProcess.run(["run", "--once"], config: configB, log: fixture.logPath, in: fixture) == .exited(0),
                "\(fixture.log)")

        let problems = audit.finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems)\n\(fixture.log)")
        let later = snapshot.laterRequestProblems(CrashSnapshot.index(server.completedRequests()), jobs: jobs)
        #expect(later.isEmpty, "\(later)")
        #expect(fixture.names(in: "work/a") == [".lease", ".lock"], "work/a: \(fixture.names(in: "work/a"))")
        for job in jobs {
            let writer = statusesBefore.contains(String(job.name.dropLast(4)) + ".status.json") ? "a" : "b"
            #expect((try? fixture.status("done", job.name))?.agent == writer, "\(job.name)")
        }
    }

    @Test("two agents downloading different files under the same name at once: each file whole, none mixed",
          .bug(id: "shared-part", "two agents wrote the same .part file: mixed data published, jobs failed"))
    func sameNameFromTwoAgents() throws {
        let server = try TestHTTPServer()
        var jobs: [(name: String, body: [UInt8])] = []
        for index in 0..<12 {
            let body = TestHTTPServer.randomBytes(400_000, seed: 9_400 + UInt64(index))
            server.serve("/n/\(index).bin", body: body, faults: [.drip(bytesPerChunk: 40_000, interval: .milliseconds(60))])
            jobs.append((String(format: "n%02d.url", index), body))
        }
        let fixture = try SpoolFixture()
        let configA = try fixture.writeAgentConfig(agentID: "a", "concurrency: { total: 6, per_host: 6 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", "concurrency: { total: 6, per_host: 6 }\n")
        // Agent a claims the first six jobs; the next six arrive after it started, for agent b.
        // Dropped files are backdated: a scan claims a file only once it has settled (2 s).
        let settled = [FileAttributeKey.modificationDate: Date(timeIntervalSinceNow: -10)]
        for (index, job) in jobs.enumerated().prefix(6) {
            try fixture.drop(job.name, server.url("/n/\(index).bin") + "\n  out=same.bin\n")
            try FileManager.default.setAttributes(settled, ofItemAtPath: fixture.spool + "/inbox/" + job.name)
        }
        let agentA = try AgentProcess(["run", "--once"], config: configA, log: fixture.logPath, in: fixture)
        try agentA.start()
        #expect(try waitUntil { fixture.jobs(in: "inbox").isEmpty && server.requests.count >= 6 }, "\(fixture.log)")
        for (index, job) in jobs.enumerated().dropFirst(6) {
            try fixture.drop(job.name, server.url("/n/\(index).bin") + "\n  out=same.bin\n")
            try FileManager.default.setAttributes(settled, ofItemAtPath: fixture.spool + "/inbox/" + job.name)
        }
        let agentB = try AgentProcess(["run", "--once"], config: configB, log: fixture.logPath, in: fixture)
        try agentB.start()
        #expect(try agentA.wait() == .exited(0), "\(fixture.log)")
        #expect(try agentB.wait() == .exited(0), "\(fixture.log)")
        #expect(server.maxConcurrentRequests > 6, "the two agents' transfers did not overlap")

        #expect(fixture.jobs(in: "done").count == 12)
        var files: Set<String> = []
        for job in jobs {
            guard let status = try? fixture.status("done", job.name) else {
                Issue.record("\(job.name) is not done: \(fixture.jobs(in: "failed"))\n\(fixture.log)")
                continue
            }
            let file = try #require(status.downloads.first?.file)
            files.insert(file)
            let data = try #require(FileManager.default.contents(atPath: file))
            let whole = data == Data(job.body)
            #expect(whole, "\(job.name) → \(file) (agent \(status.agent)) holds other bytes")
            #expect(status.downloads.first?.sha256 == TestHTTPServer.sha256Hex(job.body))
        }
        #expect(files.count == 12, "two jobs share a file: \(files.sorted())")
        #expect(fixture.destinationNames().count == 12, "\(fixture.destinationNames())")
    }

    @Test("an agent started while another one probes its work lock (adoption check) waits, it does not exit 3",
          .bug(id: "lock-probe", "an adopter's brief flock made a starting agent exit 3"))
    func startsDespiteLockProbe() throws {
        let server = try TestHTTPServer()
        let jobs = Self.serveJobs(1, on: server, delay: .zero, seed: 9_700)
        let fixture = try SpoolFixture()
        try fixture.drop(jobs[0].name, server.url(jobs[0].path) + "\n")
        let configA = try fixture.writeAgentConfig(agentID: "a")
        let lockPath = fixture.spool + "/work/a/.lock"
        try FileManager.default.createDirectory(atPath: fixture.spool + "/work/a", withIntermediateDirectories: true)
        // What agent b's adoptOrphans does for a moment: open work/a/.lock and flock(2) it.
        let probe = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(probe >= 0 && flock(probe, LOCK_EX | LOCK_NB) == 0)
        let agent = try AgentProcess(["run", "--once"], config: configA, log: fixture.logPath, in: fixture)
        try agent.start()
        let opened = try waitUntil(timeout: .seconds(10), interval: .milliseconds(2)) {
            !agent.isRunning || Self.hasOpen(lockPath, pid: agent.pid)
        }
        close(probe)
        #expect(opened)
        #expect(try agent.wait() == .exited(0), "\(fixture.log)")
        #expect(fixture.jobs(in: "done") == [jobs[0].name])
    }

    /// Whether process `pid` has `path` open (its /proc/PID/fd links).
    static func hasOpen(_ path: String, pid: Int32) -> Bool {
        let folder = "/proc/\(pid)/fd"
        let links = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return links.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)) == path }
    }

    static func text(_ path: String, lines: Int = 40) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}
