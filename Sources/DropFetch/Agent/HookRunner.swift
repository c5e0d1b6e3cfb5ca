import CLinux
import Glibc
import Logging

/// Runs the config's `hooks` (argv, never through a shell) with posix_spawnp(3): the signal mask the
/// agent blocks for its signalfd is cleared in the child, only descriptors 0, 1 and 2 reach it, and
/// finished children are reaped with waitpid(2) from the event loop.
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
        do {
            let pid = try HookRunner.spawn(program, argv, envp)
            children.insert(pid)
            logger.debug("hook \(event) started", metadata: ["pid": "\(pid)", "program": "\(program)"])
        } catch {
            logger.error("hook \(event) could not start \(program): \(error)")
        }
    }

    /// posix_spawnp(3) with a clean signal state and nothing but descriptors 0, 1 and 2: the agent's
    /// own descriptors are close-on-exec, but libcurl's internal ones (its wake-up socketpair, the
    /// threaded resolver's) cannot be marked from outside, so the child closes everything from 3 up
    /// before exec (posix_spawn_file_actions_addclosefrom_np, glibc 2.34+). A hook never holds a
    /// download's connection, a `.part` lock or the spool lock.
    private static func spawn(_ program: String, _ argv: [String], _ envp: [String]) throws(SystemError) -> pid_t {
        var attributes = posix_spawnattr_t()
        try spawnCall("posix_spawnattr_init") { posix_spawnattr_init(&attributes) }
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        try spawnCall("posix_spawnattr_setsigmask") { posix_spawnattr_setsigmask(&attributes, &emptyMask) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in SignalSource.handled + [SIGPIPE] { sigaddset(&defaults, signal) }
        try spawnCall("posix_spawnattr_setsigdefault") { posix_spawnattr_setsigdefault(&attributes, &defaults) }
        try spawnCall("posix_spawnattr_setflags") {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        }
        var actions = posix_spawn_file_actions_t()
        try spawnCall("posix_spawn_file_actions_init") { posix_spawn_file_actions_init(&actions) }
        defer { posix_spawn_file_actions_destroy(&actions) }
        try spawnCall("posix_spawn_file_actions_addclosefrom_np") { dfl_spawn_addclosefrom(&actions, 3) }

        var pid: pid_t = 0
        try spawnCall("posix_spawnp", program) {
            withCStrings(argv) { args in
                withCStrings(envp) { env in posix_spawnp(&pid, program, &actions, &attributes, args, env) }
            }
        }
        return pid
    }

    /// The posix_spawn family returns an error number instead of setting errno.
    private static func spawnCall(_ operation: String, _ path: String? = nil, _ call: () -> Int32) throws(SystemError) {
        let code = call()
        if code != 0 { throw SystemError(code: code, operation: operation, path: path) }
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

    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
