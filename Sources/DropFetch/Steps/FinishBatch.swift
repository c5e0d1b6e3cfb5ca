import Logging

/// The ends asked for (`JobFinish.Item`: a part to publish, a job to file, or both) since the
/// last batch went to the finish-steps worker, sent together as one request once that batch's
/// answer is back: group commit, so that each of a batch's sync points (fsync: true) is made once
/// for all the ends that came while the disk was busy, not once for each loop turn's few. Each
/// end's handler runs in its own step when the batch is back, so a large batch makes no long loop turn.
final class FinishBatch {
    private var items: [JobFinish.Item] = []
    private var handlers: [(JobFinish.Ending) -> Void] = []
    /// The batch on the worker: new ends wait here until its answer is back (or, when the worker
    /// skipped it, its first handler has run).
    private var away: JobFinish?
    /// Removals of parts whose publishing rename may be among the ends held here, each sent after
    /// the batch that takes the first `after` of them (`remove(_:on:)`).
    private var removals: [(after: Int, removal: PartRemoval)] = []

    var isEmpty: Bool { items.isEmpty }

    /// Ends held here, not yet with the worker (they hold their `.part`s open).
    var count: Int { items.count }

    /// Whether `flush` would send something now: the loop should not sleep.
    var isReadyToSend: Bool { !items.isEmpty && (away?.isAnswered ?? true) }

    /// Drops the ends and removals unsent (a fenced agent takes none of them, and abandons the batch away).
    func removeAll() {
        items = []
        handlers = []
        removals = []
        away = nil
    }

    /// Adds one end; `then` gets how it ended, on the loop.
    func add(_ item: JobFinish.Item, then: @escaping (JobFinish.Ending) -> Void) {
        items.append(item)
        handlers.append(then)
    }

    /// Removes a part's data on `worker` after every end held here now, since one of them may be
    /// that part's publishing rename, which `PartRemoval` must follow on the same worker.
    func remove(_ removal: PartRemoval, on worker: GroupCommit) {
        guard !items.isEmpty else { return worker.sync([.task(removal)]) { _ in } }
        removals.append((items.count, removal))
    }

    /// With `fsync: false`, a batch of fewer ends than this is done on the loop when the worker has
    /// nothing in hand: its renames cost less than the worker's two hand-offs (P6: two transfers at
    /// a time, a batch of one or two). A larger one (P2: sixteen at a time) goes to the worker, on
    /// the other core, while the loop goes on with the transfers.
    static let smallBatch = 4

    /// Sends the first `limit` ends held to `worker` as one `JobFinish`, unless a batch is still
    /// away; returns whether it sent any (done here, their handlers may have asked for more ends).
    /// The worker holds a status file open for each filing of a batch until their sync, so
    /// `limit` keeps a batch within the descriptors the agent keeps free (`DescriptorLimit.reserve`).
    @discardableResult
    func flush(to worker: GroupCommit, limit: Int, durable: Bool, crashPlan: CrashPlan?, fence: Fence?,
               logger: Logger) -> Bool {
        guard isReadyToSend else { return false }
        let count = min(items.count, max(1, limit))
        let batch = JobFinish(Array(items.prefix(count)), durable: durable, crashPlan: crashPlan, fence: fence)
        let pending = Array(handlers.prefix(count))
        items.removeFirst(count)
        handlers.removeFirst(count)
        // Taken out before the batch goes: done here, its handlers may ask for removals of their own.
        let due = removals.filter { $0.after <= count }.map(\.removal)
        removals = removals.compactMap { $0.after > count ? ($0.after - count, $0.removal) : nil }
        defer { for removal in due { worker.sync([.task(removal)]) { _ in } } }
        away = nil
        // Done at once, in this turn: one step runs every handler, in order.
        let handleAll: GroupCommit.Completion = { _ in
            for error in batch.unsynced { logger.error("a finished file or filing may not survive a power cut: \(error)") }
            for (position, handler) in pending.enumerated() { handler(batch.takeEnding(position)) }
        }
        if worker.performsInline {
            worker.sync([.task(batch)], then: handleAll)
            return true
        }
        if !durable, pending.count < FinishBatch.smallBatch, worker.isIdle {
            worker.performHere(batch, then: handleAll)
            return true
        }
        away = batch
        for (position, handler) in pending.enumerated() {
            worker.sync([.task(batch)]) { [self] _ in
                if position == 0 {
                    if away === batch { away = nil }
                    for error in batch.unsynced { logger.error("a finished file or filing may not survive a power cut: \(error)") }
                }
                handler(batch.takeEnding(position))
            }
        }
        return true
    }
}
