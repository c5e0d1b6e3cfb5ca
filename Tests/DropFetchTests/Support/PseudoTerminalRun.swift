import Foundation
import Glibc

/// One run of a program with its stdout and stderr on a pseudo-terminal (posix_openpt(3)), read
/// to the end, as a user at a terminal would see it: `isatty(2)` is true in the program, and the
/// terminal turns each `\n` into `\r\n` (ONLCR).
///
///     let run = try PseudoTerminalRun(["run", "--once", "--config", path], in: folder)
///     #expect(run.output.contains("\u{1B}["))
struct PseudoTerminalRun {
    let status: Int32
    /// Every byte the program wrote, decoded as UTF-8.
    let output: String

    /// Runs `program ARGUMENTS` in `folder` with the test's environment plus `environment` (a nil
    /// value removes a variable) on a terminal of `columns` × `rows`; kills it after `timeout`.
    init(_ arguments: [String], program: String = SpoolFixture.binary, in folder: String,
         environment: [String: String?] = [:], columns: UInt16 = 100, rows: UInt16 = 30,
         timeout: Duration = .seconds(60)) throws {
        let calls = try PseudoTerminalCalls()
        let master = calls.openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0, calls.grantpt(master) == 0, calls.unlockpt(master) == 0, let name = calls.ptsname(master) else {
            throw PseudoTerminalError.cannotOpen(errno)
        }
        defer { close(master) }
        let slave = open(String(cString: name), O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else { throw PseudoTerminalError.cannotOpen(errno) }
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(slave, UInt(TIOCSWINSZ), &size)

        var variables = ProcessInfo.processInfo.environment
        for variable in ["DROPFETCH_CONFIG", "JOURNAL_STREAM", "NOTIFY_SOCKET", "DROPFETCH_CRASH_AT", "NO_COLOR"] {
            variables[variable] = nil
        }
        variables["TERM"] = "xterm"
        for (variable, value) in environment { variables[variable] = value }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = variables
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        let terminal = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardOutput = terminal
        process.standardError = terminal
        process.standardInput = FileHandle.nullDevice
        do {
            try process.runSerially()
        } catch {
            close(slave)
            throw error
        }
        // Only the program holds the terminal now: reading the master ends (EIO) when it exits.
        close(slave)

        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var timedOut = false
        while true {
            var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 50)
            if ready > 0 {
                let count = read(master, &buffer, buffer.count)
                if count > 0 {
                    bytes += buffer[..<count]
                    continue
                }
                if count < 0, errno == EINTR || errno == EAGAIN { continue }
                break  // EIO or end: every writer has closed the terminal
            }
            if clock.now >= deadline {
                timedOut = true
                break
            }
        }
        if timedOut, process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        if timedOut { throw PseudoTerminalError.timedOut(arguments, String(decoding: bytes, as: UTF8.self)) }
        status = process.terminationStatus
        output = String(decoding: bytes, as: UTF8.self)
    }
}

enum PseudoTerminalError: Error {
    case cannotOpen(Int32)
    case timedOut([String], String)
}

/// posix_openpt(3), grantpt(3), unlockpt(3) and ptsname(3), which the Glibc module does not
/// export (they need `_XOPEN_SOURCE`), looked up in libc with dlsym(3).
private struct PseudoTerminalCalls {
    typealias Open = @convention(c) (Int32) -> Int32
    typealias Name = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?

    let openpt: Open
    let grantpt: Open
    let unlockpt: Open
    let ptsname: Name

    init() throws {
        let libc = dlopen(nil, RTLD_NOW)
        func symbol(_ name: String) throws -> UnsafeMutableRawPointer {
            guard let address = dlsym(libc, name) else { throw PseudoTerminalError.cannotOpen(ENOSYS) }
            return address
        }
        openpt = unsafeBitCast(try symbol("posix_openpt"), to: Open.self)
        grantpt = unsafeBitCast(try symbol("grantpt"), to: Open.self)
        unlockpt = unsafeBitCast(try symbol("unlockpt"), to: Open.self)
        ptsname = unsafeBitCast(try symbol("ptsname"), to: Name.self)
    }
}
