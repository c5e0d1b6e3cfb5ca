import CLinux
import Glibc
import Logging

/// Runs the config's `hooks` (argv, never through a shell) with posix_spawnp(3): the signal mask the
/// agent blocks for its signalfd is cleared in the child, only descriptors 0, 1 and 2 reach it, and
/// finished children are reaped with waitpid(2) from the event loop (woken by SIGCHLD), each outcome
/// logged with the hook and the job.
final class HookRunner {
    /// A hook that runs: which one, for which job, since when (monotonic ms).
    private struct Child {
        let event: String
        let program: String
        let job: String?
        let started: Int64
    }

    /// How long `run --once` waits for its hooks to end before it exits, in ms.
    static let onceGrace: Int64 = 30_000

    private let logger: Logger
    private var children: [pid_t: Child] = [:]

    init(logger: Logger) { self.logger = logger }

    var isRunning: Bool { !children.isEmpty }

    /// Until when (monotonic ms) the agent waits for the running hooks at the end of `run --once`:
    /// `onceGrace` after the last one started; nil when none runs.
    var waitUntil: Int64? { children.values.map(\.started).max().map { $0 + HookRunner.onceGrace } }

    /// Starts `argv` with `DROPFETCH_*` variables added to the agent's environment.
    func run(_ argv: [String], event: String, environment: [String: String]) {
        guard let program = argv.first else { return }
        var variables = Dictionary(currentEnvironment()) { first, _ in first }
        for (key, value) in environment { variables[key] = value }
        let envp = variables.map { "\($0.key)=\($0.value)" }
        let job = environment["DROPFETCH_JOB"]
        var fields: Logger.Metadata = ["hook": "\(event)", "program": "\(program)"]
        if let job { fields["job"] = "\(job)" }
        do {
            let pid = try HookRunner.spawn(program, argv, envp)
            children[pid] = Child(event: event, program: program, job: job, started: MonotonicClock.now())
            fields["pid"] = "\(pid)"
            logger.debug("hook started", metadata: fields)
        } catch {
            fields["error"] = "\(error)"
            logger.error("hook could not start", metadata: fields)
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

    /// Collects exited hooks without blocking: `hook done` at info, `hook failed` at warning
    /// (exit status or signal), each naming the hook, its program and the job.
    func reap() {
        guard !children.isEmpty else { return }
        for (pid, child) in children {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            guard result == pid || (result == -1 && errno == ECHILD) else { continue }
            children[pid] = nil
            var fields: Logger.Metadata = [
                "hook": "\(child.event)", "program": "\(child.program)", "pid": "\(pid)",
                "duration": "\(HumanUnits.seconds(Double(MonotonicClock.now() - child.started) / 1000))",
            ]
            if let job = child.job { fields["job"] = "\(job)" }
            guard result == pid else { continue }
            let signal = status & 0x7F
            if status == 0 {
                logger.info("hook done", metadata: fields)
            } else if signal != 0 {
                fields["signal"] = "\(signal)"
                logger.warning("hook failed", metadata: fields)
            } else {
                fields["exit_status"] = "\((status >> 8) & 0xFF)"
                logger.warning("hook failed", metadata: fields)
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
