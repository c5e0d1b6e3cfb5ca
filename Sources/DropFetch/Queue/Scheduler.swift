/// The run queue: which download starts next. Pure and deterministic — no I/O, time is passed in.
///
/// Order: higher priority first; among equal priority, arrival order (`fifo`) or its reverse (`lifo`).
/// Units waiting for a retry sit aside until due and then keep their original place.
struct Scheduler {
    struct Unit: Hashable, Sendable {
        var job: Int
        var download: Int
    }

    struct Entry: Sendable, Equatable {
        var unit: Unit
        var priority: Int
        /// Monotonic arrival sequence of the job.
        var arrival: Int
        var host: String
    }

    var order: Config.Order
    private var ready: [Entry] = []
    private var waiting: [(entry: Entry, due: Int64)] = []

    init(order: Config.Order = .fifo) { self.order = order }

    var readyCount: Int { ready.count }
    var waitingCount: Int { waiting.count }
    var isEmpty: Bool { ready.isEmpty && waiting.isEmpty }

    private func precedes(_ a: Entry, _ b: Entry) -> Bool {
        if a.priority != b.priority { return a.priority > b.priority }
        if a.arrival != b.arrival { return order == .fifo ? a.arrival < b.arrival : a.arrival > b.arrival }
        return a.unit.download < b.unit.download
    }

    mutating func enqueue(_ entry: Entry) {
        var low = 0
        var high = ready.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(ready[middle], entry) { low = middle + 1 } else { high = middle }
        }
        ready.insert(entry, at: low)
    }

    /// Sets a unit aside until `due` (milliseconds on the caller's clock).
    mutating func enqueue(_ entry: Entry, due: Int64) {
        waiting.append((entry, due))
    }

    /// Moves units whose time has come back into the ready queue.
    mutating func promote(now: Int64) {
        guard waiting.contains(where: { $0.due <= now }) else { return }
        let due = waiting.filter { $0.due <= now }
        waiting.removeAll { $0.due <= now }
        for item in due { enqueue(item.entry) }
    }

    /// The earliest due time of a waiting unit.
    var nextDue: Int64? { waiting.map(\.due).min() }

    /// Removes and returns the first ready unit that `canStart` admits; units it refuses keep
    /// their place and do not block the ones behind them.
    mutating func nextRunnable(now: Int64, canStart: (Entry) -> Bool) -> Entry? {
        promote(now: now)
        guard let index = ready.firstIndex(where: canStart) else { return nil }
        return ready.remove(at: index)
    }

    /// Forgets every unit of a job (cancelled or moved away).
    mutating func remove(job: Int) {
        ready.removeAll { $0.unit.job == job }
        waiting.removeAll { $0.entry.unit.job == job }
    }

    /// Re-sorts after an order change (config reload).
    mutating func reorder(_ newOrder: Config.Order) {
        order = newOrder
        let entries = ready
        ready = []
        for entry in entries { enqueue(entry) }
    }
}
