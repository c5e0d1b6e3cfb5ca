@testable import DropFetch
import Foundation
import Glibc

/// A program started with posix_spawn(3) holding nothing of the test process but descriptors 0–2,
/// and reaped with waitpid(2) by whoever waits for it.
///
/// Not Foundation's `Process`: that one learns of an exit from the close of a socket pair made
/// without close-on-exec, so a program another test starts at the same moment can inherit it and
/// hold the wait up for its whole life. A child of this type inherits nothing
/// (posix_spawn_file_actions_addclosefrom_np) and its exit is read from waitpid alone.
final class ChildProcess: @unchecked Sendable {
    /// Where a standard descriptor of the child goes: a file opened in the child, or another of its descriptors.
    enum Stream {
        case nullDevice
        case file(String, append: Bool = false)
        case sameAs(Int32)
    }

    let pid: pid_t
    private let reaped = Locked<Int32?>(nil)

    /// Starts `program arguments…` (a path, or a name looked up on `$PATH` as posix_spawnp(3) does) in
    /// `directory` with its streams as given and the test process's environment plus `extra`.
    init(_ program: String, _ arguments: [String], stdin: Stream = .nullDevice, stdout: Stream = .nullDevice,
         stderr: Stream = .nullDevice, environment extra: [String: String] = [:], directory: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .nullDevice:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path, let append):
                let flags = fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)
                posix_spawn_file_actions_addopen(&actions, fd, path, flags, 0o644)
            case .sameAs(let other):
                posix_spawn_file_actions_adddup2(&actions, other, fd)
            }
        }
        if let directory { _ = spawnActionChdir(&actions, directory) }
        _ = spawnActionCloseFrom(&actions, 3)
        var environment = ProcessInfo.processInfo.environment
        environment.merge(extra) { $1 }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawnp(&child, program, &actions, nil, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        pid = child
    }

    deinit {
        if reaped.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            _ = wait()
        }
    }

    /// Waits for the child to end: its exit status, or the number of the signal that ended it.
    @discardableResult
    func wait() -> Int32 {
        reaped.withLock { code in
            if let code { return code }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let ended = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
            code = ended
            return ended
        }
    }

    /// Whether the child still runs; one that ended is reaped here (waitpid(2) with WNOHANG).
    var isRunning: Bool {
        reaped.withLock { code in
            guard code == nil else { return false }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return true }
            code = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
            return false
        }
    }
}

/// glibc's posix_spawn_file_actions_addclosefrom_np(3) (2.34), which Swift's Glibc module does not show.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func spawnActionCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// glibc's posix_spawn_file_actions_addchdir_np(3) (2.29), which Swift's Glibc module does not show.
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func spawnActionChdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>) -> Int32

extension Process {
    private static let runLock = NSLock()

    /// `run()`, one at a time across the test process: `run` makes its exit-watch socket pair
    /// without close-on-exec and closes only the descriptors open when it looked, so two at once
    /// can hand each other's socket to a child, whose life then holds up the other's wait.
    func runSerially() throws {
        try Process.runLock.withLock { try run() }
    }
}
