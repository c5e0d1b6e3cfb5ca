import Foundation
import Glibc
import Testing

/// Helpers shared by the job-lifecycle tests (issue 9): they read the spool as a user or a
/// script would, through the contract of docs/spool.md, §3 and §5 (raw JSON, not library types),
/// so they keep compiling whatever the agent's own types become.
extension SpoolFixture {
    /// Drops a job the safe way and dates it 60 s back, so that a scan finds it settled
    /// (docs/spool.md: a file found by a scan is claimed only when its mtime is 2 s old).
    @discardableResult
    func dropSettled(_ name: String, _ content: String, folder: String = "") throws -> String {
        let path = try drop(name, content, folder: folder)
        try Self.backdate(path, seconds: 60)
        return path
    }

    static func backdate(_ path: String, seconds: TimeInterval) throws {
        let date = Date(timeIntervalSinceNow: -seconds)
        try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: path)
    }

    /// Writes a whole config (no defaults added, so a test's keys never collide with the
    /// fixture's): spool, destination, agent id, debug logs, then `body`. Returns the path.
    func writeFullConfig(_ file: String, agentID: String = "test-agent", _ body: String) throws -> String {
        let path = root.path + "/" + file
        let text = "spool: \(spool)\ndestination: \(destination)\nagent_id: \(agentID)\nlog_level: debug\n" + body
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A JSON file in the spool as an object (a status or state file), or nil.
    func jsonObject(at relativePath: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: spool + "/" + relativePath) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// `work/<agent>/<stem>.state.json` of job `jobName` (`x.url`).
    func stateJSON(agent: String = "test-agent", _ jobName: String) -> [String: Any]? {
        jsonObject(at: "work/\(agent)/" + String(jobName.dropLast(4)) + ".state.json")
    }

    /// The first download entry of running job `jobName`'s state file, if it has one yet.
    func runningEntry(_ jobName: String) -> [String: Any]? {
        guard let state = stateJSON(jobName), state["state"] as? String == "running" else { return nil }
        return (state["downloads"] as? [[String: Any]])?.first
    }

    /// `<folder>/<stem>.status.json` of record `recordName` (`x.url`, `x.1.url`).
    func statusObject(_ folder: String, _ recordName: String) -> [String: Any]? {
        jsonObject(at: folder + "/" + String(recordName.dropLast(4)) + ".status.json")
    }

    /// `dropfetch ARGS --config CONFIG` run to its end, with stdout and stderr kept apart; after
    /// `timeout` it is killed and the result says `timedOut`.
    func capture(_ arguments: [String], config: String? = nil, environment extra: [String: String] = [:],
                 timeout: Duration = .seconds(60)) throws -> CLIResult {
        let tag = UUID().uuidString.prefix(8)
        let out = root.path + "/cli-\(tag).out.log"
        let err = root.path + "/cli-\(tag).err.log"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: SpoolFixture.binary)
        process.arguments = arguments + ["--config", config ?? configPath]
        var environment = ProcessInfo.processInfo.environment
        environment["DROPFETCH_CRASH_AT"] = nil
        environment["JOURNAL_STREAM"] = nil
        environment.merge(extra) { _, new in new }
        process.environment = environment
        try FileManager.default.createDirectory(atPath: workingDirectory, withIntermediateDirectories: true)
        process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory)
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try process.runSerially()
        let ended = try waitUntil(timeout: timeout, interval: .milliseconds(5)) { !process.isRunning }
        if !ended { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let ending: AgentProcess.Ending = process.terminationReason == .uncaughtSignal
            ? .signalled(process.terminationStatus) : .exited(process.terminationStatus)
        return CLIResult(ending: ending, timedOut: !ended, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                         stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// `dropfetch status --json` as an object.
    func statusReport(config: String? = nil) throws -> [String: Any] {
        let result = try capture(["status", "--json"], config: config)
        guard result.ending == .exited(0),
              let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        else { throw LifecycleError.unexpected("status --json: \(result)") }
        return object
    }

    /// The `.part` of final file `file` in the destination.
    func partPath(_ file: String) -> String { destination + "/." + file + ".part" }

    /// The last `lines` lines of the log, for failure messages.
    func logTail(_ lines: Int = 40) -> String {
        log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

struct CLIResult: CustomStringConvertible {
    let ending: AgentProcess.Ending
    /// Still running at the deadline (then killed).
    let timedOut: Bool
    let stdout: String
    let stderr: String
    var description: String { "\(timedOut ? "still running at the deadline, " : "")\(ending)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

enum LifecycleError: Error {
    case unexpected(String)
}

/// Fields of the status and state files of docs/status-files.md, read from raw JSON.
enum StatusFields {
    static func downloads(_ object: [String: Any]?) -> [[String: Any]] {
        object?["downloads"] as? [[String: Any]] ?? []
    }

    static func firstDownload(_ object: [String: Any]?) -> [String: Any] {
        downloads(object).first ?? [:]
    }

    static func int(_ value: Any?) -> Int64? {
        (value as? NSNumber)?.int64Value
    }

    static func errorKind(_ object: [String: Any]?) -> String? {
        (object?["error"] as? [String: Any])?["kind"] as? String
    }

    /// The job names in one list of `status --json` (`active`, `waiting`, `held`, `recent`).
    static func jobs(in report: [String: Any], _ key: String) -> [String] {
        (report[key] as? [[String: Any]] ?? []).compactMap { $0["job"] as? String }
    }
}

/// What a done job must show, checked against its own server bytes: its status file says done,
/// names a file whose bytes are `body` and whose sha256 is the status's. Returns the file path.
@discardableResult
func expectDone(_ fixture: SpoolFixture, _ recordName: String, body: [UInt8],
                sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    guard fixture.jobs(in: "done").contains(recordName), let status = fixture.statusObject("done", recordName) else {
        let where_ = "done \(fixture.jobs(in: "done")), failed \(fixture.jobs(in: "failed")), work \(fixture.names(in: "work/test-agent"))"
        Issue.record("\(recordName) is not in done/: \(where_)\n\(fixture.logTail())", sourceLocation: sourceLocation)
        return nil
    }
    #expect(status["state"] as? String == "done", "\(recordName): \(status)", sourceLocation: sourceLocation)
    let download = StatusFields.firstDownload(status)
    guard let file = download["file"] as? String else {
        Issue.record("\(recordName): no file in \(download)", sourceLocation: sourceLocation)
        return nil
    }
    let data = FileManager.default.contents(atPath: file).map(Array.init) ?? []
    let expected = TestHTTPServer.sha256Hex(body)
    #expect(data.count == body.count && data == body,
            "\(recordName) → \(file): \(data.count) bytes that are not its own URL's \(body.count)", sourceLocation: sourceLocation)
    #expect(download["sha256"] as? String == expected, "\(recordName): status sha256 is not its URL's", sourceLocation: sourceLocation)
    #expect(download["sha256"] as? String == TestHTTPServer.sha256Hex(data),
            "\(recordName): status sha256 does not match \(file)", sourceLocation: sourceLocation)
    return file
}
