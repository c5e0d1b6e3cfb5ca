import Foundation
import Testing

/// Issue 37 (DESIGN.md §10, Fencing) on a real volume: agent a reaches the spool through mount c,
/// whose GlusterFS client the test cuts off from the brick while a runs transfers; agent b reaches
/// it through mount b. The brick drops the cut-off client and its locks about 5 s after the cut;
/// a's HTTP transfers go on (only its file system is cut off). Both agents run `lease:` (a lease
/// file `work/<agent>/.lease` renewed every lease/4): an agent whose renewal is late or fails is
/// fenced (it files, publishes and writes nothing, logs one `fenced:` warning, metrics
/// `dropfetch_fenced`), and a daemon re-joins once the file system answers (one `re-joined` info
/// line); another agent adopts a folder whose flock is free and whose lease has not changed for
/// lease + max(2 s, lease/4).
@Suite("A network split between an agent and a distributed volume (GlusterFS): fencing, end to end", .serialized,
       .enabled(if: NetworkSplit.mounts != nil,
                "needs DROPFETCH_TEST_SPOOL_A, _B, _C and DROPFETCH_TEST_SPLIT_CMD: run `make test-distributed` as root where a network namespace can be made (`Tests/Distributed/gluster.sh preflight` says)"))
struct DistributedSplitTests {
    /// How long the long split lasts: the brick drops a's client after ~5 s, a's lease (3 s) has
    /// run out well before, and b adopts after lease + 2 s and a rescan: 25 s leaves a margin.
    static let longCut: Duration = .seconds(25)
    /// Shorter than the volume's ping timeout (5 s) and the lease (10 s): nothing times out.
    static let shortCut: Duration = .seconds(2)

    @Test("a split of 25 s (lease: 3s) while agent a runs transfers, both daemons running throughout: a is fenced once and re-joins, b adopts a's jobs, each of 12 jobs filed once with its own bytes")
    func longSplit() throws {
        let scenario = try SplitScenario(count: 12, seed: 37_100)
        let fixture = scenario.fixture
        let logA = scenario.log("a"), logB = scenario.log("b")
        let (agentA, agentB) = try scenario.startDaemons(lease: "3s")
        defer {
            try? NetworkSplit.heal()
            agentA.kill()
            agentB.kill()
        }
        let running = try scenario.twoRunning(on: agentA, log: logA)

        try NetworkSplit.cut()
        let cut = ContinuousClock.now, cutDate = Date()
        #expect(try waitUntil(timeout: Self.longCut - .seconds(5)) { scenario.metric("a", "dropfetch_fenced") == 1 },
                "agent a's metrics do not show it fenced during the cut: \(MultiAgentTests.text(scenario.metricsPath("a")))")
        NetworkSplit.hold(until: cut + Self.longCut)
        try NetworkSplit.heal()
        #expect(agentA.isRunning && agentB.isRunning, "an agent ended during the cut: a \(MultiAgentTests.text(logA))\nb \(MultiAgentTests.text(logB))")

        #expect(try waitUntil(timeout: .seconds(30)) { !SplitScenario.lines(logA, messageStartingWith: "re-joined").isEmpty },
                "agent a does not re-join within 30 s of the heal: \(MultiAgentTests.text(logA))")
        #expect(try waitUntil(timeout: .seconds(150)) { scenario.filed >= scenario.jobs.count },
                "filed \(scenario.filed) of \(scenario.jobs.count)\na: \(MultiAgentTests.text(logA))\nb: \(MultiAgentTests.text(logB))")
        #expect(try waitUntil(timeout: .seconds(5)) { scenario.metric("a", "dropfetch_fenced") == 0 },
                "\(MultiAgentTests.text(scenario.metricsPath("a")))")
        #expect(scenario.metric("a", "dropfetch_fenced_total") == 1, "\(MultiAgentTests.text(scenario.metricsPath("a")))")
        #expect(agentA.isRunning, "agent a ended: \(MultiAgentTests.text(logA))")
        #expect(try agentA.stop() == .exited(0), "\(MultiAgentTests.text(logA))")
        #expect(try agentB.stop() == .exited(0), "\(MultiAgentTests.text(logB))")
        let adopted = running.compactMap { SplitScenario.adoptionLines(logB, job: $0).first }
        print("distributed long split: a ran \(running) at the cut; seconds after the cut: a fenced \(SplitScenario.seconds(from: cutDate, to: SplitScenario.lines(logA, messageStartingWith: "fenced:").first)), b adopted \(adopted.map { SplitScenario.seconds(from: cutDate, to: $0) }), a re-joined \(SplitScenario.seconds(from: cutDate, to: SplitScenario.lines(logA, messageStartingWith: "re-joined").first)) (healed at \(Self.longCut.components.seconds)); all filed \(CrashMatrixTests.seconds(ContinuousClock.now - cut))")

        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: scenario.jobs)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        for name in running {
            #expect(fixture.statusObject("done", name)?["agent"] as? String == "b",
                    "\(name), run by a at the cut, filed by \(fixture.statusObject("done", name)?["agent"] ?? "nobody")")
            #expect(!SplitScenario.adoptionLines(logB, job: name).isEmpty, "b's log does not show it adopted \(name)")
        }
        let fenced = SplitScenario.lines(logA, messageStartingWith: "fenced:")
        #expect(fenced.count == 1 && fenced.allSatisfy { $0["level"] == "warning" }, "\(fenced)")
        let rejoined = SplitScenario.lines(logA, messageStartingWith: "re-joined")
        #expect(rejoined.count == 1 && rejoined.allSatisfy { $0["level"] == "info" }, "\(rejoined)")
    }

    @Test("a split of 2 s, shorter than the ping timeout and the lease (lease: 10s): nothing fenced or adopted, each of 12 jobs filed once with its own bytes, nothing fetched again beyond what was in flight")
    func shortSplit() throws {
        let scenario = try SplitScenario(count: 12, seed: 37_200)
        let fixture = scenario.fixture
        let logA = scenario.log("a"), logB = scenario.log("b")
        let (agentA, agentB) = try scenario.startDaemons(lease: "10s")
        defer {
            try? NetworkSplit.heal()
            agentA.kill()
            agentB.kill()
        }
        let running = try scenario.twoRunning(on: agentA, log: logA)

        try NetworkSplit.cut()
        let cut = ContinuousClock.now
        NetworkSplit.hold(until: cut + Self.shortCut)
        try NetworkSplit.heal()

        #expect(try waitUntil(timeout: .seconds(120)) { scenario.filed >= scenario.jobs.count },
                "filed \(scenario.filed) of \(scenario.jobs.count)\na: \(MultiAgentTests.text(logA))\nb: \(MultiAgentTests.text(logB))")
        #expect(scenario.metric("a", "dropfetch_fenced") == 0 && scenario.metric("a", "dropfetch_fenced_total") == 0,
                "\(MultiAgentTests.text(scenario.metricsPath("a")))")
        #expect(agentA.isRunning && agentB.isRunning)
        #expect(try agentA.stop() == .exited(0), "\(MultiAgentTests.text(logA))")
        #expect(try agentB.stop() == .exited(0), "\(MultiAgentTests.text(logB))")
        print("distributed short split: a ran \(running) at the cut; all filed \(CrashMatrixTests.seconds(ContinuousClock.now - cut)) s after it")

        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: scenario.jobs)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        for name in running {
            #expect(fixture.statusObject("done", name)?["agent"] as? String == "a",
                    "\(name), run by a at the cut, filed by \(fixture.statusObject("done", name)?["agent"] ?? "nobody")")
        }
        for job in scenario.jobs {
            #expect(SplitScenario.adoptionLines(logB, job: job.name).isEmpty, "b adopted \(job.name): \(SplitScenario.adoptionLines(logB, job: job.name))")
        }
        #expect(SplitScenario.lines(logA, messageStartingWith: "fenced:").isEmpty, "\(MultiAgentTests.text(logA))")
        // What a request in flight at the cut may have sent that never reached its .part: at most
        // what the server pushes at its pace while a's writes are held up, the cut plus 3 s for
        // TCP's retransmission backoff to carry the client's calls again (1.6 MB of 3.5 MiB).
        let allowance = SplitScenario.bytesPerSecond * Int((Self.shortCut + .seconds(3)).components.seconds)
        let refetched = scenario.refetchProblems(cut: cut, allowance: allowance)
        #expect(refetched.isEmpty, "\(refetched)")
    }

    @Test("run --once of agent a cut off for longer than its lease (lease: 3s): it exits 75 with a fenced: line on stderr, never 0; after the heal a daemon b files every job once with its own bytes")
    func onceFenced() throws {
        let scenario = try SplitScenario(count: 6, seed: 37_300)
        let fixture = scenario.fixture
        let logA = scenario.log("a"), logB = scenario.log("b")
        let errorsA = fixture.root.path + "/agent-a.stderr.log"
        let agentA = try AgentProcess(["run", "--once"], config: try scenario.config(agent: "a", view: 2, lease: "3s"),
                                      log: logA, errors: errorsA, in: fixture)
        try agentA.start()
        defer {
            try? NetworkSplit.heal()
            agentA.kill()
        }
        let running = try scenario.twoRunning(on: agentA, log: errorsA)

        try NetworkSplit.cut()
        let cut = ContinuousClock.now, cutDate = Date()
        let endedInCut = try waitUntil(timeout: .seconds(40)) { !agentA.isRunning }
        // The cut lasts longer than the lease whenever a ends.
        NetworkSplit.hold(until: cut + .seconds(6))
        try NetworkSplit.heal()
        let ending = try? agentA.wait(timeout: .seconds(30))
        #expect(ending == .exited(75), "run --once of a fenced agent ended \(ending.map(String.init(describing:)) ?? "not within 30 s of the heal") (during the cut: \(endedInCut))\n\(MultiAgentTests.text(errorsA))")
        let fenced = SplitScenario.lines(errorsA, messageStartingWith: "fenced:")
        print("distributed run --once split: a fenced \(SplitScenario.seconds(from: cutDate, to: fenced.first)) s after the cut, ended \(ending.map(String.init(describing:)) ?? "-") \(endedInCut ? "during" : "after") the cut")
        #expect(fenced.count == 1 && fenced.allSatisfy { $0["level"] == "warning" }, "stderr: \(MultiAgentTests.text(errorsA))")

        let agentB = try AgentProcess(["run"], config: try scenario.config(agent: "b", view: 1, lease: "3s"), log: logB, in: fixture)
        try agentB.start()
        defer { agentB.kill() }
        #expect(try waitUntil(timeout: .seconds(120)) { scenario.filed >= scenario.jobs.count },
                "filed \(scenario.filed) of \(scenario.jobs.count)\nb: \(MultiAgentTests.text(logB))")
        #expect(try agentB.stop() == .exited(0), "\(MultiAgentTests.text(logB))")

        let problems = SpoolAudit(fixture: fixture).finalProblems(jobs: scenario.jobs)
        #expect(problems.isEmpty, "\(problems.prefix(20))")
        for name in running {
            #expect(fixture.statusObject("done", name)?["agent"] as? String == "b",
                    "\(name), run by a at the cut, filed by \(fixture.statusObject("done", name)?["agent"] ?? "nobody")")
        }
    }
}
