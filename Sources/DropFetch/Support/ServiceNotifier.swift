import Glibc
import Logging

/// Tells the service manager how the agent is doing: the sd_notify(3) protocol, one datagram per
/// message on the `AF_UNIX` socket named by `$NOTIFY_SOCKET`, without libsystemd.
///
/// The agent's event loop drives it: `ready()` once recovery and the first scan are over, `turn`
/// on every loop turn (a `STATUS=` line when the counts changed, at most once a second, and
/// `WATCHDOG=1` every half `WATCHDOG_USEC`), `reloading()`/`ready()` around a config reload and
/// `stopping()` when a stop begins. `nextDeadline` belongs in the loop's poll timeout.
///
///     let notifier = ServiceNotifier.fromEnvironment(logger: logger)
///     notifier?.ready()
///     notifier?.turn { ServiceNotifier.Counts(queued: 3, active: 2, waiting: 0, held: 1) }
public final class ServiceNotifier {
    /// What the `STATUS=` line reports.
    public struct Counts: Equatable, Sendable {
        public var queued: Int
        public var active: Int
        public var waiting: Int
        public var held: Int

        public init(queued: Int, active: Int, waiting: Int, held: Int) {
            self.queued = queued
            self.active = active
            self.waiting = waiting
            self.held = held
        }

        /// The text after `STATUS=`, as `systemctl status` shows it.
        public var text: String { "\(queued) queued, \(active) active, \(waiting) waiting, \(held) held" }
    }

    /// The least time between two `STATUS=` lines, in milliseconds.
    public static let statusInterval: Int64 = 1000

    /// The socket's address as given (`/path` or `@abstract`).
    public let address: String
    /// How often `WATCHDOG=1` is due (half of `WATCHDOG_USEC`), in milliseconds; nil without a watchdog.
    public let watchdogInterval: Int64?
    private let socket: NotifySocket
    private let logger: Logger?
    private var isReady = false
    private var isStopping = false
    private var nextWatchdog: Int64 = .max
    /// When the first `READY=1` went out: the first `STATUS=` is due then.
    private var readyAt: Int64 = 0
    private var lastCounts: Counts?
    private var lastStatusCheck: Int64 = .min
    private var statusCheckPending = false
    private var failureLogged = false

    /// Opens the datagram socket for `address`; `watchdogMicroseconds` is `WATCHDOG_USEC`.
    public init(address: String, watchdogMicroseconds: UInt64? = nil, logger: Logger? = nil) throws(SystemError) {
        socket = try NotifySocket(address: address)
        self.address = address
        self.logger = logger
        watchdogInterval = watchdogMicroseconds.flatMap { $0 >= 2000 ? Int64($0 / 2000) : nil }
    }

    /// The notifier the service manager asked for, or nil when `$NOTIFY_SOCKET` is unset.
    ///
    /// As sd_notify(3) does with `unset_environment`, the variables are removed from the
    /// environment so hooks do not inherit them; `WATCHDOG_USEC` counts only when `WATCHDOG_PID`
    /// is unset or names this process (sd_watchdog_enabled(3)).
    public static func fromEnvironment(logger: Logger? = nil) -> ServiceNotifier? {
        let variables = ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]
        var environment: [String: String] = [:]
        for name in variables {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        guard let address = environment["NOTIFY_SOCKET"], !address.isEmpty else { return nil }
        for name in variables where environment[name] != nil { unsetenv(name) }
        var watchdog = environment["WATCHDOG_USEC"].flatMap { UInt64($0) }
        if let owner = environment["WATCHDOG_PID"], owner != String(getpid()) { watchdog = nil }
        do {
            return try ServiceNotifier(address: address, watchdogMicroseconds: watchdog, logger: logger)
        } catch {
            logger?.warning("service manager not notified: NOTIFY_SOCKET=\(address): \(error)")
            return nil
        }
    }

    /// `READY=1`: start-up is over (also after a reload). The watchdog starts with the first one.
    public func ready(now: Int64? = nil) {
        guard !isStopping else { return }
        let now = now ?? MonotonicClock.now()
        send("READY=1")
        if !isReady {
            readyAt = now
            if let watchdogInterval { nextWatchdog = now + watchdogInterval }
        }
        isReady = true
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC, as systemd compares it); `ready()` ends it.
    public func reloading() {
        guard !isStopping else { return }
        let microseconds = MonotonicClock.nanoseconds() / 1000
        send("RELOADING=1\nMONOTONIC_USEC=\(microseconds)")
    }

    /// `STOPPING=1`, once; nothing is sent after it.
    public func stopping() {
        guard !isStopping else { return }
        isStopping = true
        send("STOPPING=1")
    }

    /// `STATUS=` with `text` (a fenced agent says so) and `WATCHDOG=1` when due, for a wait
    /// outside the loop's turns.
    public func status(_ text: String, now: Int64? = nil) {
        guard isReady, !isStopping else { return }
        send("STATUS=" + text)
        lastCounts = nil
        keepAlive(now: now)
    }

    /// `WATCHDOG=1` when due.
    public func keepAlive(now: Int64? = nil) {
        guard isReady, !isStopping, let watchdogInterval else { return }
        let now = now ?? MonotonicClock.now()
        if now >= nextWatchdog {
            send("WATCHDOG=1")
            nextWatchdog = now + watchdogInterval
        }
    }

    /// One loop turn: `STATUS=` when the counts changed (read at most once a second; `counts` is
    /// evaluated only then) and `WATCHDOG=1` when due. Nothing before `ready()` or after `stopping()`.
    public func turn(now: Int64? = nil, counts: () -> Counts) {
        guard isReady, !isStopping else { return }
        let now = now ?? MonotonicClock.now()
        if lastStatusCheck == .min || now - lastStatusCheck >= ServiceNotifier.statusInterval {
            lastStatusCheck = now
            statusCheckPending = false
            let current = counts()
            if current != lastCounts {
                send("STATUS=" + current.text)
                lastCounts = current
            }
        } else {
            statusCheckPending = true
        }
        if now >= nextWatchdog, let watchdogInterval {
            send("WATCHDOG=1")
            nextWatchdog = now + watchdogInterval
        }
    }

    /// The monotonic millisecond by which the loop must turn again: the first `STATUS=` (due with
    /// `READY=1`), the next `WATCHDOG=1`, or the moment a status change seen too soon after the last
    /// one may be sent. Nil when nothing is due.
    public var nextDeadline: Int64? {
        guard isReady, !isStopping else { return nil }
        if lastStatusCheck == .min { return readyAt }
        var deadline: Int64?
        if watchdogInterval != nil { deadline = nextWatchdog }
        if statusCheckPending {
            deadline = min(deadline ?? .max, lastStatusCheck + ServiceNotifier.statusInterval)
        }
        return deadline
    }

    /// Sends one message; a failure is logged once until a send succeeds again. The service
    /// manager's view is advisory, so the agent carries on either way.
    private func send(_ message: String) {
        do {
            try socket.send(message)
            failureLogged = false
        } catch {
            guard !failureLogged else { return }
            failureLogged = true
            logger?.warning("cannot notify the service manager at \(address): \(error)")
        }
    }
}
