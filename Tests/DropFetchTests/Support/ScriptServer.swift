import Foundation
import Glibc

/// A server program run by a test in its own folder — a Python script of
/// `ProtocolServerScripts`, or OpenSSH's sshd — killed when the value goes away.
///
/// Readiness is waited for by polling a condition (a ready file, a log line), never by sleeping.
final class ScriptServer: @unchecked Sendable {
    let folder: String
    let logPath: String
    /// A `ChildProcess`, not Foundation's `Process`: sshd closes every inherited descriptor, and
    /// `Process` takes the close of its own watch socket for the child's exit and then blocks in
    /// waitpid(2), holding up every other `Process` of the test run.
    private let child: ChildProcess

    /// Starts `program ARGUMENTS` with stdout and stderr in `folder/<name>.log`.
    init(_ program: String, _ arguments: [String], name: String, folder: String) throws {
        self.folder = folder
        logPath = folder + "/" + name + ".log"
        child = try ChildProcess(program, arguments, stdout: .file(logPath, append: true), stderr: .sameAs(1),
                                 environment: ["PYTHONDONTWRITEBYTECODE": "1"])
    }

    deinit { stop() }

    /// Ends the server (SIGKILL) and reaps it.
    func stop() {
        if child.isRunning { kill(child.pid, SIGKILL) }
        child.wait()
    }

    /// Whether the server still runs (reaped once it ended).
    var isRunning: Bool { child.isRunning }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits until `condition` holds while the process runs; throws with the log if it ends first
    /// or `timeout` passes.
    func waitReady(timeout: Duration = .seconds(20), _ what: String, _ condition: () -> Bool) throws {
        let ready = try waitUntil(timeout: timeout, interval: .milliseconds(10)) { condition() || !isRunning }
        guard ready, isRunning, condition() else {
            throw ScriptServerError.notReady(what, log)
        }
    }

    /// Starts `/usr/bin/python3 SCRIPT CONFIG` where CONFIG is `settings` as JSON plus `ready` and
    /// `events` paths in `folder`; returns once the script has written its port.
    static func python(_ script: String, name: String, settings: [String: Any], folder: String) throws -> (ScriptServer, port: Int) {
        let scriptPath = folder + "/" + name + ".py"
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        var settings = settings
        let ready = folder + "/" + name + ".ready"
        settings["ready"] = ready
        settings["events"] = folder + "/" + name + ".events"
        let configPath = folder + "/" + name + ".json"
        try JSONSerialization.data(withJSONObject: settings, options: [.sortedKeys]).write(to: URL(fileURLWithPath: configPath))
        let server = try ScriptServer(pythonPath, [scriptPath, configPath], name: name, folder: folder)
        try server.waitReady("\(name) to listen") { FileManager.default.fileExists(atPath: ready) }
        let text = (try? String(contentsOfFile: ready, encoding: .utf8)) ?? ""
        guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ScriptServerError.notReady("a port from \(name)", server.log)
        }
        return (server, port)
    }

    /// Debian's interpreter, which has python3-pyftpdlib and python3-openssl (another python on the
    /// PATH, e.g. pyenv's, would not).
    static let pythonPath = "/usr/bin/python3"

    /// Lines appended to `<folder>/<name>.events` so far.
    static func events(_ folder: String, _ name: String) -> [String] {
        let text = (try? String(contentsOfFile: folder + "/" + name + ".events", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Runs a tool to its end (ssh-keygen, openssl); throws with its output when it fails.
    static func run(_ program: String, _ arguments: [String], in folder: String) throws {
        let outputPath = folder + "/tool-\(UUID().uuidString.prefix(8)).out"
        defer { unlink(outputPath) }
        let tool = try ChildProcess(program, arguments, stdout: .file(outputPath), stderr: .sameAs(1), directory: folder)
        guard tool.wait() == 0 else {
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw ScriptServerError.toolFailed(([program] + arguments).joined(separator: " "), output)
        }
    }

    /// A fresh folder under the temporary directory.
    static func makeFolder(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/dropfetch-\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

enum ScriptServerError: Error, CustomStringConvertible {
    case notReady(String, String)
    case toolFailed(String, String)

    var description: String {
        switch self {
        case .notReady(let what, let log): "gave up waiting for \(what); log:\n\(log)"
        case .toolFailed(let command, let output): "\(command) failed:\n\(output)"
        }
    }
}
