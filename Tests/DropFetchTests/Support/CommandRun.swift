import Foundation
import Glibc

/// One run of the `dropfetch` binary (or any program) to its end, with exactly the arguments,
/// environment and working folder given, stdout and stderr captured apart in files, as a user at
/// a shell would see them.
///
///     let result = try CommandRun(["status"], in: folder)
///     #expect(result.status == 3)
///     #expect(result.stderr.contains("no spool"))
struct CommandRun {
    let status: Int32
    let stdout: String
    let stderr: String

    /// Runs `program ARGUMENTS` in `folder` with the test's environment plus `environment` (a nil
    /// value removes a variable). `journal` sets `JOURNAL_STREAM` to the stderr file's device and
    /// inode, as systemd does for a unit whose output goes to the journal.
    init(_ arguments: [String], program: String = SpoolFixture.binary, in folder: String,
         environment: [String: String?] = [:], journal: Bool = false, timeout: Duration = .seconds(60)) throws {
        let id = UUID().uuidString
        let outPath = FileManager.default.temporaryDirectory.path + "/dropfetch-out-\(id)"
        let errPath = FileManager.default.temporaryDirectory.path + "/dropfetch-err-\(id)"
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        var variables = ProcessInfo.processInfo.environment
        for name in ["DROPFETCH_CONFIG", "JOURNAL_STREAM", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                     "DROPFETCH_CRASH_AT"] {
            variables[name] = nil
        }
        if journal {
            var info = stat()
            fstat(err.fileDescriptor, &info)
            variables["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        }
        for (name, value) in environment { variables[name] = value }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = variables
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let finished = try waitUntil(timeout: timeout, interval: .milliseconds(5)) { !process.isRunning }
        if !finished {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CommandRunError.timedOut(arguments)
        }
        process.waitUntilExit()
        try out.close()
        try err.close()
        status = process.terminationStatus
        stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    }

    /// stderr's lines, without the empty one after the last newline.
    var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
}

enum CommandRunError: Error {
    case timedOut([String])
}
