import Foundation
import Glibc
import Testing

/// The crash matrix and kill storm extended (issue 9, "What must hold" item 2): `kill -9` while a
/// job that owns a name waits for a retry, and while it sits in hold/ with partial data, with a
/// second job of the same name running. After a restart every invariant of docs/spool.md holds:
/// each job filed once, every published file whole and its own job's, names owned (6), no refetch
/// of resumable data.
@Suite("Kills around same-name jobs that wait or are held, end to end", .serialized)
struct SameNameCrashTests {
    static let bodyA = TestHTTPServer.randomBytes(1_200_000, seed: 9_990)
    static let bodyB = TestHTTPServer.randomBytes(600_000, seed: 9_991)
    static let jobs = [
        SpoolAudit.ExpectedJob(name: "a.url", path: "/a.bin", file: "same.bin", body: bodyA),
        SpoolAudit.ExpectedJob(name: "b.url", path: "/b.bin", file: "same.1.bin", body: bodyB),
    ]

    /// Problems that must never be seen on disk, even the instant after a kill: each job in one
    /// place, every published file one job's bytes in full, every `.part` a prefix of one job's
    /// bytes (never a splice of two).
    static func instantProblems(_ fixture: SpoolFixture, _ jobs: [SpoolAudit.ExpectedJob]) -> [String] {
        var problems: [String] = []
        let records = SpoolAudit(fixture: fixture).jobRecords()
        for job in jobs where (records[job.name] ?? []).count != 1 {
            problems.append("\(job.name) is in \((records[job.name] ?? []).count) places: \(records[job.name] ?? [])")
        }
        for name in SpoolAudit(fixture: fixture).destinationFiles() {
            guard let data = FileManager.default.contents(atPath: fixture.destination + "/" + name).map(Array.init) else { continue }
            let base = (name as NSString).lastPathComponent
            if base.hasSuffix(".part") {
                if !data.isEmpty, !jobs.contains(where: { $0.body.count >= data.count && Array($0.body.prefix(data.count)) == data }) {
                    problems.append("\(name): \(data.count) bytes that are no job's prefix (mixed data)")
                }
            } else if !base.hasPrefix("."), !jobs.contains(where: { $0.body == data }) {
                problems.append("\(name) is published with \(data.count) bytes that are no job's whole file")
            }
        }
        return problems
    }

    struct Setup {
        let server: TestHTTPServer
        let fixture: SpoolFixture
        let config: String

        init(aFaults: [TestHTTPServer.Fault], retry: String) throws {
            server = try TestHTTPServer()
            server.serve("/a.bin", body: SameNameCrashTests.bodyA, faults: aFaults)
            server.serve("/b.bin", body: SameNameCrashTests.bodyB, faults: [.times(1, .drip(bytesPerChunk: 20_000, interval: .milliseconds(60)))])
            fixture = try SpoolFixture()
            config = try fixture.writeAgentConfig(agentID: "test-agent", retry: retry, "concurrency: { total: 2, per_host: 2 }\n")
        }

        func drop(_ job: String) throws {
            try fixture.drop(job + ".url", server.url("/\(job).bin") + "\n  out=same.bin\n")
        }

        /// B's request has sent `bytes` or more: B is mid-transfer.
        func waitForB(_ bytes: Int = 100_000) throws {
            let midway = try waitUntil { (server.requests(to: "/b.bin").first?.bodyBytesSent ?? 0) >= bytes }
            try #require(midway, "B does not run: \(fixture.logTail())")
        }

        /// The end state, and that resumable data was resumed from its size.
        func expectFinal(_ snapshot: CrashSnapshot, sourceLocation: SourceLocation = #_sourceLocation) {
            let audit = SpoolAudit(fixture: fixture)
            let problems = audit.finalProblems(jobs: SameNameCrashTests.jobs)
            #expect(problems.isEmpty, "\(problems)\n\(fixture.logTail())", sourceLocation: sourceLocation)
            let later = snapshot.laterRequestProblems(CrashSnapshot.index(server.completedRequests()), jobs: SameNameCrashTests.jobs)
            #expect(later.isEmpty, "after the kill (\(snapshot.progress)): \(later)", sourceLocation: sourceLocation)
            expectDone(fixture, "a.url", body: SameNameCrashTests.bodyA, sourceLocation: sourceLocation)
            expectDone(fixture, "b.url", body: SameNameCrashTests.bodyB, sourceLocation: sourceLocation)
        }
    }

    @Test("kill -9 while A (same.bin) waits for a retry with partial data and B (same out=) is mid-transfer; run --once finishes both")
    func killWhileSameNameJobWaits() throws {
        let setup = try Setup(aFaults: [.times(1, .dropAfter(bytes: 300_000))], retry: "{ attempts: 5, initial_delay: 8s, max_delay: 8s }")
        let fixture = setup.fixture
        let agent = try AgentProcess(["run"], config: setup.config, log: fixture.logPath, in: fixture)
        try agent.start()
        try setup.drop("a")
        let waiting = try waitUntil {
            setup.server.requests(to: "/a.bin").first?.isFinished == true && fixture.stateJSON("a.url")?["retry_at"] != nil
        }
        try #require(waiting, "A does not wait for a retry: \(fixture.logTail())")
        try setup.drop("b")
        try setup.waitForB()
        try #require(setup.server.requests(to: "/a.bin").count == 1, "A's retry came before the kill: the case was not exercised")
        #expect(agent.kill() == .signalled(SIGKILL))

        let instant = Self.instantProblems(fixture, Self.jobs)
        #expect(instant.isEmpty, "\(instant)")
        let partA = FileManager.default.contents(atPath: fixture.partPath("same.bin")).map(Array.init) ?? []
        #expect(partA.count == 300_000 && partA == Array(Self.bodyA.prefix(300_000)), "A's .part holds \(partA.count) bytes, not A's first 300000")
        let snapshot = CrashSnapshot(audit: SpoolAudit(fixture: fixture), jobs: Self.jobs,
                                     requestCount: setup.server.completedRequests().count)

        let once = try AgentProcess.run(["run", "--once"], config: setup.config, log: fixture.logPath, in: fixture, timeout: .seconds(40))
        #expect(once == .exited(0), "\(fixture.logTail())")
        setup.expectFinal(snapshot)
    }

    @Test("kill -9 while A is held with partial data and B (same out=) is mid-transfer; run --once does B, A stays held, then is done")
    func killWhileSameNameJobIsHeld() throws {
        let setup = try Setup(aFaults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))],
                              retry: "{ attempts: 5, initial_delay: 200ms, max_delay: 500ms }")
        let fixture = setup.fixture
        let agent = try AgentProcess(["run"], config: setup.config, log: fixture.logPath, in: fixture)
        try agent.start()
        try setup.drop("a")
        #expect(try waitUntil { (fixture.fileSize(fixture.partPath("same.bin")) ?? 0) >= 200_000 }, "\(fixture.logTail())")
        #expect(try fixture.runCLI(["hold", "a"], config: setup.config) == 0)
        #expect(try waitUntil { setup.server.requests(to: "/a.bin").allSatisfy(\.isFinished) })
        let kept = try #require(fixture.fileSize(fixture.partPath("same.bin")))
        try setup.drop("b")
        try setup.waitForB()
        #expect(agent.kill() == .signalled(SIGKILL))

        let instant = Self.instantProblems(fixture, Self.jobs)
        #expect(instant.isEmpty, "\(instant)")
        #expect(fixture.jobs(in: "hold") == ["a.url"])
        let snapshot = CrashSnapshot(audit: SpoolAudit(fixture: fixture), jobs: Self.jobs,
                                     requestCount: setup.server.completedRequests().count)
        #expect(snapshot.progress["a.url"] == .resumable(kept), "A's partial data after the kill: \(snapshot.progress)")

        let first = try AgentProcess.run(["run", "--once"], config: setup.config, log: fixture.logPath, in: fixture)
        #expect(first == .exited(0), "\(fixture.logTail())")
        #expect(fixture.jobs(in: "done") == ["b.url"])
        #expect(fixture.jobs(in: "hold") == ["a.url"], "run --once leaves held jobs alone")
        #expect(fixture.fileSize(fixture.partPath("same.bin")) == kept, "A's .part after B was done")
        #expect(Self.instantProblems(fixture, Self.jobs).isEmpty)

        #expect(try fixture.runCLI(["release", "a"], config: setup.config) == 0)
        let second = try AgentProcess.run(["run", "--once"], config: setup.config, log: fixture.logPath, in: fixture)
        #expect(second == .exited(0), "\(fixture.logTail())")
        setup.expectFinal(snapshot)
    }

    /// 12 jobs sharing 4 output names, with cut connections, 503s and slow bodies, while a daemon
    /// is killed 25 times at random moments and jobs are held and released in between. After
    /// each kill the instant invariants hold; at the end (all released, one `run --once`) every
    /// job is done once with its own bytes under its own name. `DROPFETCH_SOAK_SEED=N` repeats a run's choices.
    @Test("kill storm over same-name jobs that wait for retries and are held: every job done once with its own bytes")
    func sameNameKillStorm() throws {
        let began = ContinuousClock.now
        let seed = ProcessInfo.processInfo.environment["DROPFETCH_SOAK_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("same-name kill storm: seed \(seed)")
        var random = SplitMix64(seed: seed)
        let server = try TestHTTPServer()
        var jobs: [SpoolAudit.ExpectedJob] = []
        for index in 0..<12 {
            let size = Int.random(in: 60_000...400_000, using: &random)
            let body = TestHTTPServer.randomBytes(size, seed: seed &+ UInt64(index))
            let path = String(format: "/storm/s%02d.bin", index)
            let faults: [TestHTTPServer.Fault] = switch index % 3 {
            case 0: [.times(1, .dropAfter(bytes: size / 2))]
            case 1: [.times(1, .status(code: 503))]
            default: [.drip(bytesPerChunk: 16_384, interval: .milliseconds(10))]
            }
            server.serve(path, body: body, faults: faults)
            // The file name is not known in advance: four jobs race for each of g0…g2.bin.
            jobs.append(SpoolAudit.ExpectedJob(name: String(format: "s%02d.url", index), path: path, file: "", body: body))
        }
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 1000, initial_delay: 100ms, max_delay: 300ms }",
                                                  "concurrency: { total: 4, per_host: 4 }\n")
        var dropped = 0
        var kills = 0
        var starts = 0
        var problems: [String] = []
        while kills < 25, starts < 60 {
            starts += 1
            let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
            try agent.start()
            for _ in 0..<3 where dropped < jobs.count {
                try fixture.drop(jobs[dropped].name, server.url(jobs[dropped].path) + "\n  out=g\(dropped % 3).bin\n")
                dropped += 1
            }
            // Not a synchronisation: the random moment of the kill is the point of the test.
            Thread.sleep(forTimeInterval: Double(Int.random(in: 50...400, using: &random)) / 1000)
            let working = fixture.jobs(in: "work/test-agent")
            if Int.random(in: 0..<3, using: &random) == 0, let job = working.randomElement(using: &random) {
                _ = try fixture.runCLI(["hold", job], config: config)
            }
            let held = fixture.jobs(in: "hold")
            if Int.random(in: 0..<3, using: &random) == 0, let job = held.randomElement(using: &random) {
                _ = try fixture.runCLI(["release", job], config: config)
            }
            if agent.kill() == .signalled(SIGKILL) { kills += 1 }
            problems += Self.instantProblems(fixture, Array(jobs[..<dropped])).map { "after start \(starts): \($0)" }
        }
        #expect(kills == 25)
        #expect(problems.isEmpty, "\(problems.prefix(20))")

        for job in fixture.jobs(in: "hold") { #expect(try fixture.runCLI(["release", job], config: config) == 0) }
        let ending = try AgentProcess.run(["run", "--once"], config: config, log: fixture.logPath, in: fixture, timeout: .seconds(90))
        #expect(ending == .exited(0), "\(fixture.logTail())")

        let records = SpoolAudit(fixture: fixture).jobRecords()
        var files: [String: String] = [:]
        for job in jobs {
            #expect(records[job.name] == ["done/" + job.name], "\(job.name) is filed as \(records[job.name] ?? [])")
            guard let file = expectDone(fixture, job.name, body: job.body) else { continue }
            if let other = files[file] { Issue.record("\(job.name) and \(other) are both done with \(file)") }
            files[file] = job.name
        }
        let left = SpoolAudit(fixture: fixture).destinationFiles().filter { !files.keys.contains(fixture.destination + "/" + $0) }
        #expect(left.isEmpty, "left in the destination: \(left)")
        #expect(SpoolAudit(fixture: fixture).leftoversInSpool().isEmpty, "\(SpoolAudit(fixture: fixture).leftoversInSpool())")
        #expect(SpoolAudit(fixture: fixture).writesOutside().isEmpty)
        print("same-name kill storm: seed \(seed), \(kills) kills in \(starts) starts, "
            + "\(server.completedRequests().count) requests, \(CrashMatrixTests.seconds(ContinuousClock.now - began)) s")
    }
}
