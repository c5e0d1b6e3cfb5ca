import Foundation
import Glibc

/// One run of the real `dropfetch` binary with its own config, environment and working folder,
/// for tests that start several agents or crash one on purpose (`kill(2)` with SIGKILL, or the
/// `DROPFETCH_CRASH_AT` points of a debug build).
///
///     let agent = try AgentProcess(["run"], config: path, log: fixture.logPath, in: fixture)
///     try agent.start()
///     #expect(agent.kill() == .signalled(SIGKILL))
final class AgentProcess: @unchecked Sendable {
    /// How the process ended, as waitpid(2) reported it through Foundation's `Process`.
    enum Ending: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        var description: String {
            switch self {
            case .exited(let code): "exit \(code)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    private let process = Process()
    private let arguments: [String]
    private var ending: Ending?
    private var gate: Pipe?
    private let preloadsFakeClock: Bool

    /// Prepares `dropfetch ARGUMENTS --config CONFIG`; `environment` is added to the test's own
    /// (without any inherited `DROPFETCH_CRASH_AT`), stdout and stderr are appended to `log` (stderr
    /// to `errors` instead, when given), and the working folder is `fixture.root/cwd`, which the
    /// agent must leave empty.
    ///
    /// With `heldAtStart`, `start()` leaves a shell waiting on its stdin and `release()` lets it
    /// exec the binary, so that several agents can be let go at the same moment.
    init(_ arguments: [String], config: String, environment: [String: String] = [:], log: String,
         errors: String? = nil, in fixture: SpoolFixture, heldAtStart: Bool = false) throws {
        self.arguments = arguments
        preloadsFakeClock = environment["LD_PRELOAD"]?.contains("libfaketime") == true
        if heldAtStart {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "read go && exec \"$0\" \"$@\"", SpoolFixture.binary] + arguments + ["--config", config]
            let gate = Pipe()
            process.standardInput = gate
            self.gate = gate
        } else {
            process.executableURL = URL(fileURLWithPath: SpoolFixture.binary)
            process.arguments = arguments + ["--config", config]
        }
        var inherited = ProcessInfo.processInfo.environment
        inherited["DROPFETCH_CRASH_AT"] = nil
        inherited["JOURNAL_STREAM"] = nil
        process.environment = inherited.merging(environment) { _, new in new }
        try FileManager.default.createDirectory(atPath: fixture.workingDirectory, withIntermediateDirectories: true)
        process.currentDirectoryURL = URL(fileURLWithPath: fixture.workingDirectory)
        process.standardOutput = try Self.appending(to: log)
        process.standardError = try errors.map(Self.appending) ?? process.standardOutput
    }

    private static func appending(to path: String) throws -> FileHandle {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw AgentProcessError.cannotOpenLog(path, errno) }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    deinit {
        if process.isRunning { _ = kill() }
        removeFakeClockFiles()
    }

    /// libfaketime's constructor creates /dev/shm/sem.faketime_sem_PID and faketime_shm_PID in the
    /// preloaded shell of `heldAtStart` and removes them in its destructor, which a shell that execs
    /// never runs (the agent, the same PID, finds them and keeps away from them: created there, its
    /// setenv(3) moved the environment and the binary saw no arguments). Removed once the agent ended.
    private func removeFakeClockFiles() {
        guard preloadsFakeClock, process.processIdentifier > 0, !process.isRunning else { return }
        let pid = process.processIdentifier
        unlink("/dev/shm/sem.faketime_sem_\(pid)")
        unlink("/dev/shm/faketime_shm_\(pid)")
    }

    func start() throws { try process.runSerially() }

    /// Lets an agent started with `heldAtStart` exec the binary.
    func release() throws {
        guard let gate else { return }
        try gate.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
        try gate.fileHandleForWriting.close()
        self.gate = nil
    }

    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }

    /// Sends SIGKILL (if it still runs) and reaps the process; returns how it ended.
    @discardableResult
    func kill() -> Ending {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return recordEnding()
    }

    /// Sends SIGTERM and waits up to `timeout` for the exit; SIGKILL and a throw after that.
    @discardableResult
    func stop(timeout: Duration = .seconds(10)) throws -> Ending {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGTERM) }
        return try wait(timeout: timeout)
    }

    /// Waits up to `timeout` for the process to end by itself; kills it and throws after that.
    @discardableResult
    func wait(timeout: Duration = .seconds(120)) throws -> Ending {
        let ended = try waitUntil(timeout: timeout, interval: .milliseconds(5)) { !self.process.isRunning }
        if !ended {
            kill()
            throw AgentProcessError.timedOut(arguments, timeout)
        }
        process.waitUntilExit()
        return recordEnding()
    }

    private func recordEnding() -> Ending {
        if let ending { return ending }
        let result: Ending = process.terminationReason == .uncaughtSignal
            ? .signalled(process.terminationStatus) : .exited(process.terminationStatus)
        ending = result
        return result
    }

    /// Runs `dropfetch ARGUMENTS` to its end (at most `timeout`) and returns how it ended.
    static func run(_ arguments: [String], config: String, environment: [String: String] = [:], log: String,
                    in fixture: SpoolFixture, timeout: Duration = .seconds(120)) throws -> Ending {
        let agent = try AgentProcess(arguments, config: config, environment: environment, log: log, in: fixture)
        try agent.start()
        return try agent.wait(timeout: timeout)
    }
}

enum AgentProcessError: Error {
    case cannotOpenLog(String, Int32)
    case timedOut([String], Duration)
}

extension SpoolFixture {
    /// An empty folder the agents run in: anything that appears there was written outside the
    /// spool and destination (invariant 4).
    var workingDirectory: String { root.path + "/cwd" }

    /// Writes a config for an agent on this spool and destination (as `writeConfig` does, with
    /// its own agent id and retry policy), in its own file; returns the path. `view` is the mount
    /// through which the agent reaches them (`SpoolFixture(on:)`).
    func writeAgentConfig(agentID: String, retry: String = "{ attempts: 3, initial_delay: 100ms, max_delay: 1s }",
                          view: Int = 0, scanInterval: String = "30s", _ extra: String = "") throws -> String {
        let path = root.path + "/config-\(agentID).yaml"
        let text = """
            spool: \(spool(view: view))
            destination: \(destination(view: view))
            agent_id: \(agentID)
            log_level: debug
            retry: \(retry)
            scan_interval: \(scanInterval)

            """ + extra
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
