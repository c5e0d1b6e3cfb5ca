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
        if program == SpoolFixture.binary, SystemConfigIsolation.needed(arguments, variables) {
            // The machine's /etc/dropfetch/config.yaml must not stand in for the built-in defaults.
            guard SystemConfigIsolation.possible else { throw CommandRunError.systemConfigPresent }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            process.arguments = ["-m", "--propagation", "private", "sh", "-c",
                                 "mount -t tmpfs -o mode=0755 tmpfs /etc/dropfetch && exec \"$0\" \"$@\"", program] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
        }
        process.environment = variables
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.runSerially()
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
    case systemConfigPresent
}

/// Tests never read this machine's config: a run of the binary that would fall back to an
/// installed `/etc/dropfetch/config.yaml` (no `--config`, no `$DROPFETCH_CONFIG`) gets an empty
/// tmpfs over `/etc/dropfetch` in a private mount namespace (root and unshare(1)); where that
/// cannot be done, tests that need the built-in defaults are not run (`possible`).
enum SystemConfigIsolation {
    static let systemFolder = "/etc/dropfetch"

    /// Whether a config is installed that this run would read.
    static func needed(_ arguments: [String], _ environment: [String: String]) -> Bool {
        guard !arguments.contains(where: { $0 == "--config" || $0.hasPrefix("--config=") }),
              (environment["DROPFETCH_CONFIG"] ?? "").isEmpty else { return false }
        var info = stat()
        return lstat(systemFolder + "/config.yaml", &info) == 0
    }

    /// Whether tests relying on the built-in defaults can run here.
    static let possible: Bool = {
        var info = stat()
        guard lstat(systemFolder + "/config.yaml", &info) == 0 else { return true }
        return getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
    }()
}
