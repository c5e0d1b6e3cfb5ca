import Foundation
import Testing

/// One spool on the volume of `NetworkSplit` with slow jobs, for the split tests: agent a reaches
/// it through mount c (view 2, the one that is cut off), agent b through mount b (view 1), and
/// the test reads it through mount a (view 0), which a cut never blocks. Each job is `sNN.url`
/// for `/s/sNN.bin`, 3.5 MiB sent `chunk` bytes every 100 ms: about 11 s a job, so an agent has
/// transfers running whenever the test cuts it off.
final class SplitScenario {
    static let bodySize = 3_670_016
    static let chunk = 32_768
    /// The pace of one answer: `chunk` bytes every 100 ms.
    static let bytesPerSecond = chunk * 10

    let fixture: SpoolFixture
    let server: TestHTTPServer
    let jobs: [SpoolAudit.ExpectedJob]
    /// The agents' metrics files, on the local disk so that they are written during a cut.
    private let metricsFolder: String

    init(count: Int, seed: UInt64) throws {
        guard let mounts = NetworkSplit.mounts else { throw NetworkSplitError.notConfigured }
        fixture = try SpoolFixture(on: mounts)
        server = try TestHTTPServer()
        var jobs: [SpoolAudit.ExpectedJob] = []
        for index in 0..<count {
            let body = TestHTTPServer.randomBytes(Self.bodySize, seed: seed + UInt64(index))
            let path = String(format: "/s/s%02d.bin", index)
            server.serve(path, body: body, faults: [.drip(bytesPerChunk: Self.chunk, interval: .milliseconds(100))])
            jobs.append(SpoolAudit.ExpectedJob(name: String(format: "s%02d.url", index), path: path,
                                               file: String(format: "s%02d.bin", index), body: body))
        }
        self.jobs = jobs
        metricsFolder = FileManager.default.temporaryDirectory.path + "/dropfetch-split-metrics-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: metricsFolder, withIntermediateDirectories: false)
        for job in jobs { try fixture.dropSettled(job.name, server.url(job.path) + "\n") }
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: metricsFolder)
    }

    /// Writes agent `agent`'s config: the spool as mount `view` shows it, rescans every second,
    /// three transfers at once, the given `lease`, a metrics file.
    func config(agent: String, view: Int, lease: String) throws -> String {
        try fixture.writeAgentConfig(agentID: agent, view: view, scanInterval: "1s", """
            concurrency: { total: 3, per_host: 3 }
            lease: \(lease)
            metrics_file: \(metricsPath(agent))

            """)
    }

    func log(_ agent: String) -> String { fixture.root.path + "/agent-\(agent).log" }

    func metricsPath(_ agent: String) -> String { metricsFolder + "/\(agent).prom" }

    /// A sample of agent `agent`'s metrics file, nil while it has none.
    func metric(_ agent: String, _ name: String) -> Double? {
        (try? Metrics(metricsPath(agent)))?[name]
    }

    /// The jobs agent `agent` is fetching now by its state files (as mount a shows them, up to a
    /// second late), those with at least `left` bytes still to come: they cannot end before a cut
    /// that follows at once.
    func running(agent: String, left: Int) -> [String] {
        fixture.names(in: "work/" + agent).filter { $0.hasSuffix(".state.json") && !$0.hasPrefix(".") }.compactMap { name in
            guard let state = fixture.jsonObject(at: "work/\(agent)/\(name)"), state["state"] as? String == "running",
                  let bytes = StatusFields.int(StatusFields.firstDownload(state)["bytes"]), bytes > 0,
                  Self.bodySize - Int(bytes) >= left else { return nil }
            return state["job"] as? String ?? String(name.dropLast(".state.json".count)) + ".url"
        }.sorted()
    }

    /// Starts daemon b (mount b), then, once b's work folder is there, daemon a (mount c): both
    /// under `lease`. The caller stops them (and heals) in its own `defer`.
    func startDaemons(lease: String) throws -> (a: AgentProcess, b: AgentProcess) {
        let agentB = try AgentProcess(["run"], config: try config(agent: "b", view: 1, lease: lease), log: log("b"), in: fixture)
        let agentA = try AgentProcess(["run"], config: try config(agent: "a", view: 2, lease: lease), log: log("a"), in: fixture)
        try agentB.start()
        try #require(try waitUntil { FileManager.default.fileExists(atPath: fixture.spool + "/work/b") },
                     "\(MultiAgentTests.text(log("b")))")
        try agentA.start()
        return (agentA, agentB)
    }

    /// The jobs agent a runs with at least 1 MiB still to come, once there are two (within 30 s);
    /// fails the test, showing `log`, when a does not get there.
    func twoRunning(on agentA: AgentProcess, log: String) throws -> [String] {
        var running: [String] = []
        _ = try waitUntil(timeout: .seconds(30)) {
            running = self.running(agent: "a", left: 1 << 20)
            return running.count >= 2 || !agentA.isRunning
        }
        try #require(running.count >= 2, "agent a does not run two transfers: \(MultiAgentTests.text(log))")
        return running
    }

    /// How many jobs are filed (done/ and failed/).
    var filed: Int { fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count }

    /// The logfmt lines of a log or stderr file (lines that are not logfmt left out).
    static func lines(_ path: String) -> [LogfmtLine] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? LogfmtLine(String($0)) }
    }

    /// The lines of `path` whose message starts with `prefix`.
    static func lines(_ path: String, messageStartingWith prefix: String) -> [LogfmtLine] {
        lines(path).filter { $0["msg"]?.hasPrefix(prefix) == true }
    }

    /// Seconds from `start` to when `line` was logged (its `ts=`), for the printed timeline of a
    /// split: the agents of a split test run on one host, one clock.
    static func seconds(from start: Date, to line: LogfmtLine?) -> String {
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let stamp = line?["ts"], let date = parser.date(from: stamp) else { return "-" }
        return String(format: "%.1f", date.timeIntervalSince(start))
    }

    /// The lines of `path` that say job `job` was adopted or resumed from another run's work.
    static func adoptionLines(_ path: String, job: String) -> [LogfmtLine] {
        lines(path).filter { line in
            guard line["job"] == job, let message = line["msg"]?.lowercased() else { return false }
            return message.contains("adopt") || message.contains("resuming a job of")
        }
    }

    /// What the server sent beyond each body: a URL that no request was fetching at `cut` is sent
    /// exactly once, whole; one that was in flight may be sent `allowance` bytes more (the
    /// in-flight request's bytes that had not reached its `.part`).
    func refetchProblems(cut: ContinuousClock.Instant, allowance: Int) -> [String] {
        let log = server.completedRequests()
        var problems: [String] = []
        for job in jobs {
            let requests = log.filter { $0.path == job.path }
            let sent = requests.reduce(0) { $0 + $1.bodyBytesSent }
            let inFlight = requests.contains { $0.received < cut && ($0.finished.map { $0 > cut } ?? true) }
            if !inFlight && sent != job.body.count {
                problems.append("\(job.path), not in flight at the cut, was sent \(sent) bytes for \(job.body.count): \(requests)")
            } else if inFlight && sent > job.body.count + allowance {
                problems.append("\(job.path), in flight at the cut, was sent \(sent) bytes for \(job.body.count), more than \(allowance) again: \(requests)")
            }
        }
        return problems
    }
}
