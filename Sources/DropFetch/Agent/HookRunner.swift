import Glibc
import Logging

/// Runs the config's `hooks` (argv, never through a shell) with posix_spawnp(3): the signal mask the
/// agent blocks for its signalfd is cleared in the child, and finished children are reaped with
/// waitpid(2) from the event loop.
final class HookRunner {
    private let logger: Logger
    private var children: Set<pid_t> = []

    init(logger: Logger) { self.logger = logger }

    /// Starts `argv` with `DROPFETCH_*` variables added to the agent's environment.
    func run(_ argv: [String], event: String, environment: [String: String]) {
        guard let program = argv.first else { return }
        var variables = Dictionary(currentEnvironment()) { first, _ in first }
        for (key, value) in environment { variables[key] = value }
        let envp = variables.map { "\($0.key)=\($0.value)" }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in SignalSource.handled + [SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid: pid_t = 0
        let status = withCStrings(argv) { args in
            withCStrings(envp) { env in posix_spawnp(&pid, program, nil, &attributes, args, env) }
        }
        if status == 0 {
            children.insert(pid)
            logger.debug("hook \(event) started", metadata: ["pid": "\(pid)", "program": "\(program)"])
        } else {
            logger.error("hook \(event) could not start \(program): \(String(cString: strerror(status)))")
        }
    }

    /// Collects exited hooks without blocking, logging the ones that failed.
    func reap() {
        guard !children.isEmpty else { return }
        for pid in children {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            guard result == pid || (result == -1 && errno == ECHILD) else { continue }
            children.remove(pid)
            let exitCode = (status >> 8) & 0xFF
            if result == pid, status != 0 {
                logger.warning("hook exited with status \(exitCode)", metadata: ["pid": "\(pid)"])
            }
        }
    }

    private func currentEnvironment() -> [(String, String)] {
        var result: [(String, String)] = []
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result.append((String(text[..<equals]), String(text[text.index(after: equals)...])))
            }
            pointer += 1
        }
        return result
    }

    private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
