import Glibc

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
