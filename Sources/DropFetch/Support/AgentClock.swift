import Glibc

/// The agent's one clock (issue 34): monotonic time for deadlines and budgets, wall time for
/// records, both from clock_gettime(2), or set by a test that drives the agent's time itself.
/// Read on the loop thread only.
final class AgentClock {
    private enum Source {
        case system
        /// A test's time: it moves only when the test moves it.
        case manual(monotonic: Int64, wall: Int64)
    }

    private var source: Source

    /// The system's clocks.
    init() {
        source = .system
    }

    /// A clock that stands at `monotonic` and `wall` (nanoseconds) until `advance(by:)`.
    init(monotonic: Int64, wall: Int64) {
        source = .manual(monotonic: monotonic, wall: wall)
    }

    /// Nanoseconds on CLOCK_MONOTONIC: budgets within one loop turn.
    func nanoseconds() -> Int64 {
        switch source {
        case .system: return MonotonicClock.nanoseconds()
        case .manual(let monotonic, _): return monotonic
        }
    }

    /// Milliseconds on CLOCK_MONOTONIC: timers that wall-clock jumps cannot disturb.
    func now() -> Int64 {
        switch source {
        case .system: return MonotonicClock.now()
        case .manual(let monotonic, _): return monotonic / 1_000_000
        }
    }

    /// Nanoseconds since the epoch on CLOCK_REALTIME: arrival order, settle checks, windows.
    func wallNanoseconds() -> Int64 {
        switch source {
        case .system:
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        case .manual(_, let wall): return wall
        }
    }

    /// Whole seconds since the epoch: what status records' times are made of.
    func wallSeconds() -> Int64 {
        let nanoseconds = wallNanoseconds()
        return nanoseconds >= 0 ? nanoseconds / 1_000_000_000 : (nanoseconds - 999_999_999) / 1_000_000_000
    }

    /// A manual clock moves both times on by `nanoseconds`; the system's cannot be moved.
    func advance(by nanoseconds: Int64) {
        guard case .manual(let monotonic, let wall) = source else { return }
        source = .manual(monotonic: monotonic + nanoseconds, wall: wall + nanoseconds)
    }
}

/// Milliseconds on CLOCK_MONOTONIC (clock_gettime(2)): timers that wall-clock jumps cannot disturb.
enum MonotonicClock {
    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// Nanoseconds on CLOCK_MONOTONIC, for budgets within one loop turn.
    static func nanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
