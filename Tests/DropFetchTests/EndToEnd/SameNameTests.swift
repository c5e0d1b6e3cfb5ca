import Foundation
import Glibc
import Testing

/// docs/spool.md invariant 6 (issue 9, items 1 and 11): a job's output names belong to it from the
/// moment they are chosen until it is filed — while it runs, waits for a retry, or sits in hold/
/// with partial data, across kills and restarts. A second job of the same `out=` takes the next
/// free name (`on_conflict: rename`) and never writes or truncates the first one's `.part`; every
/// done job's file has its own URL's bytes and its status's sha256.
@Suite("Same output name: held and waiting jobs keep their names, end to end", .serialized)
struct SameNameTests {
    static let bodyA = TestHTTPServer.randomBytes(1_200_000, seed: 9_500)
    static let bodyB = TestHTTPServer.randomBytes(200_000, seed: 9_501)
    /// A's first failure waits 4–8 s (jitter), long enough for B to run meanwhile.
    static let slowRetry = "{ attempts: 5, initial_delay: 8s, max_delay: 8s }"

    /// A server for job A at /a.bin (`aFaults`) and job B at /b.bin (`bFaults`), both `out=same.bin`.
    struct Setup {
        let server: TestHTTPServer
        let fixture: SpoolFixture
        let config: String
        var jobA: String { server.url("/a.bin") + "\n  out=same.bin\n" }
        var jobB: String { server.url("/b.bin") + "\n  out=same.bin\n" }
        var part: String { fixture.partPath("same.bin") }

        init(aFaults: [TestHTTPServer.Fault], bFaults: [TestHTTPServer.Fault] = [], retry: String = SameNameTests.slowRetry) throws {
            server = try TestHTTPServer()
            server.serve("/a.bin", body: SameNameTests.bodyA, faults: aFaults)
            server.serve("/b.bin", body: SameNameTests.bodyB, faults: bFaults)
            fixture = try SpoolFixture()
            config = try fixture.writeAgentConfig(agentID: "test-agent", retry: retry, "concurrency: { total: 2, per_host: 2 }\n")
        }

        func daemon() throws -> AgentProcess {
            let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
            try agent.start()
            return agent
        }

        /// The `.part` holds exactly a prefix of A's bytes, at least `size` long (B never wrote it).
        func expectPartIsA(atLeast size: Int, _ moment: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let data = FileManager.default.contents(atPath: part).map(Array.init)
            guard let data else {
                Issue.record("\(moment): A's .part \(part) is gone (\(fixture.destinationNames()))", sourceLocation: sourceLocation)
                return
            }
            #expect(data.count >= size && Array(SameNameTests.bodyA.prefix(data.count)) == data,
                    "\(moment): A's .part holds \(data.count) bytes that are not A's first \(size)", sourceLocation: sourceLocation)
        }

        /// Both done, each with its own bytes; A kept `same.bin`, B took `same.1.bin`; nothing left over.
        func expectBothDone(sourceLocation: SourceLocation = #_sourceLocation) {
            let fileA = expectDone(fixture, "a.url", body: SameNameTests.bodyA, sourceLocation: sourceLocation)
            let fileB = expectDone(fixture, "b.url", body: SameNameTests.bodyB, sourceLocation: sourceLocation)
            #expect(fileA == fixture.destination + "/same.bin", "A chose same.bin first and owns it", sourceLocation: sourceLocation)
            #expect(fileB == fixture.destination + "/same.1.bin", "B takes the next free name", sourceLocation: sourceLocation)
            let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: [
                SpoolAudit.ExpectedJob(name: "a.url", path: "/a.bin", file: "same.bin", body: SameNameTests.bodyA),
                SpoolAudit.ExpectedJob(name: "b.url", path: "/b.bin", file: "same.1.bin", body: SameNameTests.bodyB),
            ])
            #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
        }

        /// A's first request after `count` earlier ones asked for a Range near `kept` (the resume
        /// point may be a little lower if the agent keeps only data it had synced).
        func expectAResumed(from kept: Int, after count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            let later = server.completedRequests().filter { $0.path == "/a.bin" }.dropFirst(count)
            let start = later.first.flatMap { rangeStart($0.header("Range")) }
            #expect(start.map { $0 > 0 && $0 <= kept && $0 >= kept - 256 * 1024 } == true,
                    "A's partial data (\(kept) bytes) was not resumed: \(later.map { "\($0) Range \($0.header("Range") ?? "none")" })",
                    sourceLocation: sourceLocation)
        }
    }

    @Test("A held with partial data, B of the same out= runs and finishes, A released: both done, each its own bytes")
    func heldJobKeepsItsName() throws {
        let setup = try Setup(aFaults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))])
        let fixture = setup.fixture
        let agent = try setup.daemon()
        try fixture.drop("a.url", setup.jobA)
        #expect(try waitUntil { (fixture.fileSize(setup.part) ?? 0) >= 200_000 }, "\(fixture.logTail())")
        #expect(try fixture.runCLI(["hold", "a"], config: setup.config) == 0)
        #expect(fixture.jobs(in: "hold") == ["a.url"])
        #expect(try waitUntil { setup.server.requests(to: "/a.bin").allSatisfy(\.isFinished) })
        let kept = try #require(fixture.fileSize(setup.part))
        setup.expectPartIsA(atLeast: 200_000, "after the hold")

        try fixture.drop("b.url", setup.jobB)
        #expect(try waitUntil { fixture.jobs(in: "done").contains("b.url") || fixture.jobs(in: "failed").contains("b.url") },
                "\(fixture.logTail())")
        setup.expectPartIsA(atLeast: kept, "after B was done")

        #expect(try fixture.runCLI(["release", "a"], config: setup.config) == 0)
        #expect(try waitUntil { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count == 2 }, "\(fixture.logTail())")
        #expect(try agent.stop() == .exited(0))
        setup.expectBothDone()
        setup.expectAResumed(from: kept, after: 1)
    }

    @Test("B downloads same.bin, A takes same.1.bin and is held with partial data, B is cancelled, A released: A resumes under same.1.bin, not the freed same.bin, and no .part is left")
    func heldJobKeepsItsRenamedName() throws {
        let setup = try Setup(aFaults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))],
                              bFaults: [.times(1, .drip(bytesPerChunk: 10_000, interval: .milliseconds(300)))])
        let fixture = setup.fixture
        let agent = try setup.daemon()
        try fixture.drop("b.url", setup.jobB)
        #expect(try waitUntil { (fixture.fileSize(setup.part) ?? 0) >= 10_000 }, "\(fixture.logTail())")
        try fixture.drop("a.url", setup.jobA)
        let partA = fixture.partPath("same.1.bin")
        #expect(try waitUntil { (fixture.fileSize(partA) ?? 0) >= 200_000 }, "\(fixture.logTail())")
        #expect(try fixture.runCLI(["hold", "a"], config: setup.config) == 0)
        #expect(try waitUntil { setup.server.requests(to: "/a.bin").allSatisfy(\.isFinished) })
        let kept = try #require(fixture.fileSize(partA))
        #expect(try fixture.runCLI(["cancel", "b"], config: setup.config) == 0)
        #expect(try waitUntil { fixture.jobs(in: "failed") == ["b.url"] && fixture.fileSize(setup.part) == nil },
                "\(fixture.destinationNames())\n\(fixture.logTail())")

        #expect(try fixture.runCLI(["release", "a"], config: setup.config) == 0)
        #expect(try waitUntil { fixture.jobs(in: "done") == ["a.url"] }, "\(fixture.logTail())")
        #expect(try agent.stop() == .exited(0))
        let fileA = expectDone(fixture, "a.url", body: SameNameTests.bodyA)
        #expect(fileA == fixture.destination + "/same.1.bin", "A keeps the name it had chosen")
        setup.expectAResumed(from: kept, after: 1)
        #expect(fixture.destinationNames() == ["same.1.bin"], "nothing else is left in the destination")
    }

    @Test("A waits for a retry with partial data, B of the same out= runs and finishes: both done, each its own bytes")
    func waitingJobKeepsItsName() throws {
        let setup = try Setup(aFaults: [.times(1, .dropAfter(bytes: 300_000))])
        let fixture = setup.fixture
        let agent = try setup.daemon()
        try fixture.drop("a.url", setup.jobA)
        try waitForRetry(of: "a.url", setup)

        try fixture.drop("b.url", setup.jobB)
        #expect(try waitUntil { fixture.jobs(in: "done").contains("b.url") || fixture.jobs(in: "failed").contains("b.url") },
                "\(fixture.logTail())")
        try #require(setup.server.requests(to: "/a.bin").count == 1, "A's retry came before B was done: the case was not exercised")
        setup.expectPartIsA(atLeast: 300_000, "after B was done, while A waits")

        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count == 2 },
                "\(fixture.logTail())")
        #expect(try agent.stop() == .exited(0))
        setup.expectBothDone()
        setup.expectAResumed(from: 300_000, after: 1)
    }

    @Test("A held with partial data, B of the same out= mid-transfer, kill -9, restart, release A: both done, each its own bytes")
    func heldJobSurvivesKill() throws {
        let setup = try Setup(aFaults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))],
                              bFaults: [.times(1, .drip(bytesPerChunk: 10_000, interval: .milliseconds(60)))])
        let fixture = setup.fixture
        let first = try setup.daemon()
        try fixture.drop("a.url", setup.jobA)
        #expect(try waitUntil { (fixture.fileSize(setup.part) ?? 0) >= 200_000 }, "\(fixture.logTail())")
        #expect(try fixture.runCLI(["hold", "a"], config: setup.config) == 0)
        #expect(try waitUntil { setup.server.requests(to: "/a.bin").allSatisfy(\.isFinished) })
        let kept = try #require(fixture.fileSize(setup.part))

        try fixture.drop("b.url", setup.jobB)
        #expect(try waitUntil { (setup.server.requests(to: "/b.bin").first?.bodyBytesSent ?? 0) >= 50_000 }, "\(fixture.logTail())")
        #expect(first.kill() == .signalled(SIGKILL))
        setup.expectPartIsA(atLeast: kept, "after the kill, B mid-transfer")
        #expect(fixture.jobs(in: "hold") == ["a.url"])

        let second = try setup.daemon()
        #expect(try waitUntil { fixture.jobs(in: "done").contains("b.url") || fixture.jobs(in: "failed").contains("b.url") },
                "\(fixture.logTail())")
        setup.expectPartIsA(atLeast: kept, "after B was done")
        let before = setup.server.requests(to: "/a.bin").count
        #expect(try fixture.runCLI(["release", "a"], config: setup.config) == 0)
        #expect(try waitUntil { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count == 2 }, "\(fixture.logTail())")
        #expect(try second.stop() == .exited(0))
        setup.expectBothDone()
        setup.expectAResumed(from: kept, after: before)
    }

    @Test("A waits for a retry with partial data, B of the same out= done, kill -9, run --once: A done with its own bytes, not B's")
    func waitingJobSurvivesKill() throws {
        let setup = try Setup(aFaults: [.times(1, .dropAfter(bytes: 300_000))])
        let fixture = setup.fixture
        let first = try setup.daemon()
        try fixture.drop("a.url", setup.jobA)
        try waitForRetry(of: "a.url", setup)
        try fixture.drop("b.url", setup.jobB)
        #expect(try waitUntil { fixture.jobs(in: "done").contains("b.url") || fixture.jobs(in: "failed").contains("b.url") },
                "\(fixture.logTail())")
        try #require(setup.server.requests(to: "/a.bin").count == 1, "A's retry came before B was done: the case was not exercised")
        #expect(first.kill() == .signalled(SIGKILL))
        setup.expectPartIsA(atLeast: 300_000, "after the kill, while A waits")

        let once = try AgentProcess.run(["run", "--once"], config: setup.config, log: fixture.logPath, in: fixture,
                                        timeout: .seconds(40))
        #expect(once == .exited(0), "\(fixture.logTail())")
        setup.expectBothDone()
        setup.expectAResumed(from: 300_000, after: 1)
    }

    /// Waits until A's first request is over and its state file carries a `retry_at`.
    private func waitForRetry(of job: String, _ setup: Setup, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let waiting = try waitUntil {
            setup.server.requests(to: "/a.bin").first?.isFinished == true && setup.fixture.stateJSON(job)?["retry_at"] != nil
        }
        try #require(waiting, "\(job) does not wait for a retry: \(setup.fixture.stateJSON(job) ?? [:])\n\(setup.fixture.logTail())",
                     sourceLocation: sourceLocation)
    }
}

/// The start N of a `Range: bytes=N-` header.
func rangeStart(_ header: String?) -> Int? {
    guard let header, header.hasPrefix("bytes="), header.hasSuffix("-") else { return nil }
    return Int(header.dropFirst(6).dropLast())
}
