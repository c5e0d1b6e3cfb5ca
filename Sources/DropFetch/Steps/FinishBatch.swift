import Logging

/// The ends asked for during one loop turn (`JobFinish.Item`: a part to publish, a job to file,
/// or both), sent to the finish-steps worker as one request at the end of the turn; each end's
/// handler runs in its own step when the batch is back, so a large batch makes no long loop turn.
final class FinishBatch {
    private var items: [JobFinish.Item] = []
    private var handlers: [(JobFinish.Ending) -> Void] = []

    var isEmpty: Bool { items.isEmpty }

    /// Drops this turn's ends unsent (a fenced agent takes none of them).
    func removeAll() {
        items = []
        handlers = []
    }

    /// Adds one end; `then` gets how it ended, on the loop.
    func add(_ item: JobFinish.Item, then: @escaping (JobFinish.Ending) -> Void) {
        items.append(item)
        handlers.append(then)
    }

    /// With `fsync: false`, a batch of fewer ends than this is done on the loop when the worker has
    /// nothing in hand: its renames cost less than the worker's two hand-offs (P6: two transfers at
    /// a time, a batch of one or two). A larger one (P2: sixteen at a time) goes to the worker, on
    /// the other core, while the loop goes on with the transfers.
    static let smallBatch = 4

    /// Sends this turn's ends to `worker` as one `JobFinish`.
    func flush(to worker: GroupCommit, durable: Bool, crashPlan: CrashPlan?, fence: Fence?, logger: Logger) {
        guard !items.isEmpty else { return }
        let batch = JobFinish(items, durable: durable, crashPlan: crashPlan, fence: fence)
        let pending = handlers
        items = []
        handlers = []
        // Done at once, in this turn: one step runs every handler, in order.
        let handleAll: GroupCommit.Completion = { _ in
            for error in batch.unsynced { logger.error("a finished file or filing may not survive a power cut: \(error)") }
            for (position, handler) in pending.enumerated() { handler(batch.takeEnding(position)) }
        }
        if worker.performsInline { return worker.sync([.task(batch)], then: handleAll) }
        if !durable, pending.count < FinishBatch.smallBatch, worker.isIdle { return worker.performHere(batch, then: handleAll) }
        for (position, handler) in pending.enumerated() {
            worker.sync([.task(batch)]) { _ in
                if position == 0 {
                    for error in batch.unsynced { logger.error("a finished file or filing may not survive a power cut: \(error)") }
                }
                handler(batch.takeEnding(position))
            }
        }
    }
}
