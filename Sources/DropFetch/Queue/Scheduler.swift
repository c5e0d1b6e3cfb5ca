/// The run queue: which download starts next. Pure and deterministic — no I/O, time is passed in.
///
/// Order: higher priority first; among equal priority, arrival order (`fifo`) or its reverse (`lifo`).
/// Units waiting for a retry sit aside until due and then keep their original place.
struct Scheduler {
    struct Unit: Hashable, Sendable {
        var job: Int
        var download: Int

        /// The `download` of an unclaimed inbox job: it is claimed when chosen, then its downloads queue.
        static let wholeJob = -1
    }

    struct Entry: Sendable, Equatable {
        var unit: Unit
        var priority: Int
        /// Monotonic arrival sequence of the job.
        var arrival: Int
        var host: String
        var className: String = "default"
    }

    private(set) var order: Config.Order
    private var ready: PriorityHeap<Entry>
    private var waiting = PriorityHeap<(entry: Entry, due: Int64)> { $0.due < $1.due }

    init(order: Config.Order = .fifo) {
        self.order = order
        ready = PriorityHeap(precedes: Scheduler.precedence(order))
    }

    var readyCount: Int { ready.count }
    var waitingCount: Int { waiting.count }
    var isEmpty: Bool { ready.isEmpty && waiting.isEmpty }

    private static func precedence(_ order: Config.Order) -> (Entry, Entry) -> Bool {
        { a, b in
            if a.priority != b.priority { return a.priority > b.priority }
            if a.arrival != b.arrival { return order == .fifo ? a.arrival < b.arrival : a.arrival > b.arrival }
            return a.unit.download < b.unit.download
        }
    }

    mutating func enqueue(_ entry: Entry) {
        ready.push(entry)
    }

    /// Sets a unit aside until `due` (milliseconds on the caller's clock).
    mutating func enqueue(_ entry: Entry, due: Int64) {
        waiting.push((entry, due))
    }

    /// Moves units whose time has come back into the ready queue.
    mutating func promote(now: Int64) {
        while let next = waiting.first, next.due <= now {
            waiting.pop()
            ready.push(next.entry)
        }
    }

    /// The earliest due time of a waiting unit.
    var nextDue: Int64? { waiting.first?.due }

    /// Removes and returns the first ready unit that `canStart` admits; units it refuses keep
    /// their place and do not block the ones behind them.
    mutating func nextRunnable(now: Int64, canStart: (Entry) -> Bool) -> Entry? {
        promote(now: now)
        var refused: [Entry] = []
        defer { for entry in refused { ready.push(entry) } }
        while let candidate = ready.pop() {
            if canStart(candidate) { return candidate }
            refused.append(candidate)
        }
        return nil
    }

    /// Forgets every unit of a job (cancelled or moved away).
    mutating func remove(job: Int) {
        remove { $0.unit.job == job }
    }

    mutating func remove(where matches: (Entry) -> Bool) {
        ready.filter { !matches($0) }
        waiting.filter { !matches($0.entry) }
    }

    /// Re-sorts every unit after a config reload: a new order, and each entry updated in place
    /// (its class and priority looked up afresh).
    mutating func rebuild(order newOrder: Config.Order, update: (inout Entry) -> Void) {
        order = newOrder
        let entries = ready.elements
        ready = PriorityHeap(precedes: Scheduler.precedence(newOrder))
        for var entry in entries {
            update(&entry)
            ready.push(entry)
        }
        let sleeping = waiting.elements
        waiting = PriorityHeap { $0.due < $1.due }
        for var item in sleeping {
            update(&item.entry)
            waiting.push(item)
        }
    }
}
