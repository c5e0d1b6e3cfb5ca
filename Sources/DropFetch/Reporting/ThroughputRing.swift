/// Bytes received per minute over the last hour, kept in memory by the agent for the status
/// page's sparkline: sixty slots by minute of the monotonic clock, each reset when its minute
/// comes round again. Nothing is persisted; a restart starts an empty hour.
struct ThroughputRing: Equatable {
    static let minutes = 60

    private var bytes = [Int64](repeating: 0, count: ThroughputRing.minutes)
    /// The minute (monotonic ms / 60,000) each slot counts.
    private var minute = [Int64](repeating: .min, count: ThroughputRing.minutes)
    private var lastTotal: Int64?

    /// Counts the growth of `total` (bytes received since the agent started, never smaller than
    /// before) since the last call, in the minute of `now` (monotonic ms).
    mutating func record(total: Int64, now: Int64) {
        defer { lastTotal = total }
        guard let lastTotal, total > lastTotal else { return }
        let current = now / 60_000
        let slot = Int(current % Int64(ThroughputRing.minutes))
        if minute[slot] != current {
            minute[slot] = current
            bytes[slot] = 0
        }
        bytes[slot] += total - lastTotal
    }

    /// The last sixty minutes at `now`, oldest first, the current minute last; minutes without
    /// bytes are 0.
    func perMinute(at now: Int64) -> [Int64] {
        let current = now / 60_000
        return (0..<Int64(ThroughputRing.minutes)).reversed().map { back in
            let wanted = current - back
            let slot = Int(((wanted % 60) + 60) % 60)
            return minute[slot] == wanted ? bytes[slot] : 0
        }
    }
}
