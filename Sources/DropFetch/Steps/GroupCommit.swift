import Glibc

/// Group commit: the fsyncs that jobs ask for during one loop turn go to the `SyncWorker` as one
/// batch, with each file and folder synced once however many jobs wait on it, and each job takes
/// its next step only when everything it waits on is durable (docs/architecture.md). Status and
/// state files are written there too: creating a file can take milliseconds where the file system
/// looks long for a free inode (ext4 without a journal skips recently deleted ones).
///
/// One batch is in flight at a time; what is asked for meanwhile forms the next one, so batches
/// grow with the load. With `fsync: false` the syncs are left out (a request of syncs only
/// completes at once) and files are still created on the worker; if the worker cannot start,
/// requests are done inline.
final class GroupCommit {
    /// Something to make durable.
    enum Target {
        /// A file's data and the metadata needed to read it (fdatasync(2)).
        case data(FileDescriptor)
        /// A file with all its metadata (fsync(2)).
        case file(FileDescriptor)
        /// A folder, so that the names created or renamed in it last (fsync(2)).
        case folder(DirectoryHandle)
        /// A new file at `path` (O_EXCL) holding `bytes`, with its data and metadata durable.
        case newFile(path: String, bytes: [UInt8], mode: UInt32)
        /// The file at `path` replaced by one holding `bytes` (temp → rename), not synced: a state
        /// file. Asked for twice in one round, it is written once with the later bytes.
        case replacedFile(path: String, bytes: [UInt8])
        /// Work done whole on the worker, after the targets asked for before it in the same round.
        case task(any WorkerTask)

        /// One key per file or folder: a folder reached through two handles is synced once.
        fileprivate var key: Key {
            switch self {
            case .data(let file), .file(let file): return .descriptor(file.rawValue)
            case .folder(let folder): return .inode(folder.device, folder.inode)
            case .newFile(let path, _, _), .replacedFile(let path, _): return .path(path)
            case .task(let task): return .task(ObjectIdentifier(task))
            }
        }

        /// What the worker does for this target; a task's request goes as its `exchange`'s work.
        fileprivate func workerTarget(durable: Bool, exchange: WorkerExchange?) -> SyncWorker.Target {
            switch self {
            case .data(let file): return SyncWorker.Target(action: .syncFile(file, dataOnly: true), path: file.path)
            case .file(let file): return SyncWorker.Target(action: .syncFile(file, dataOnly: false), path: file.path)
            case .folder(let folder): return SyncWorker.Target(action: .syncFolder(folder), path: folder.path)
            case .newFile(let path, let bytes, let mode):
                return SyncWorker.Target(action: .create(bytes: bytes, mode: mode, durable: durable), path: path)
            case .replacedFile(let path, let bytes):
                return SyncWorker.Target(action: .replace(bytes: bytes, mode: 0o644), path: path)
            case .task(let task):
                // Only the task's request goes; the task stays here for its answer. A task names
                // its own files in its errors; its type's name would cost a demangling.
                let work = exchange?.work ?? { @Sendable [request = task.request] in _ = request.perform() }
                return SyncWorker.Target(action: .run(work), path: "")
            }
        }

        /// The target done here, on the loop (no worker), with the error its waiters get.
        fileprivate func performInline(durable: Bool, fence: Fence?) -> SystemError? {
            if let fence, fence.isBroken { return SyncWorker.fenced("") }
            if case .task(let task) = self { return task.perform() }
            return SyncWorker.perform(workerTarget(durable: durable, exchange: nil)).error
        }

        fileprivate var isSync: Bool {
            switch self {
            case .newFile, .replacedFile, .task: return false
            case .data, .file, .folder: return true
            }
        }
    }

    fileprivate enum Key: Hashable {
        case descriptor(Int32)
        case inode(UInt64, UInt64)
        case path(String)
        case task(ObjectIdentifier)
    }

    typealias Completion = (SystemError?) -> Void

    /// A step waiting on targets of a round (indices into its `targets`).
    private typealias Waiter = (targets: [Int], then: Completion)
    /// What a waiter whose step ran is left as: its targets and closure released.
    private static var ran: Waiter { ([], { _ in }) }

    /// Requests gathered for the next batch, or being synced in the one in flight (which keeps
    /// the targets' files and folders open until it is back).
    private struct Round {
        var targets: [Target] = []
        /// A task target's trip to the worker and back, by the target's index.
        var exchanges: [Int: WorkerExchange] = [:]
        var index: [Key: Int] = [:]
        /// Each waiter's targets (indices into `targets`) and what runs once they are durable.
        var waiters: [Waiter] = []

        mutating func add(_ requested: [Target], then: @escaping Completion) {
            var indices: [Int] = []
            for target in requested {
                let key = target.key
                if let known = index[key] {
                    // A data-only sync does not cover a full one asked for the same file.
                    if case .file = target, case .data = targets[known] { targets[known] = target }
                    if case .replacedFile = target { targets[known] = target }
                    indices.append(known)
                } else {
                    index[key] = targets.count
                    indices.append(targets.count)
                    if case .task(let task) = target { exchanges[targets.count] = task.exchange() }
                    targets.append(target)
                }
            }
            waiters.append((indices, then))
        }
    }

    private enum State {
        /// Requests are done inline: the worker could not be started.
        case inline
        case idle(SyncWorker)
        case syncing(SyncWorker, Round)
    }

    private var state: State
    /// Asked before each step (DESIGN.md §10 Fencing): set once the agent holds its lease.
    var fence: Fence?
    /// The tasks done inline since the last `flush`, with their errors: a later waiter on one of
    /// them takes that, however many other tasks ran between (the task is held, so its identity
    /// cannot pass to another object meanwhile).
    private var inlineTasks: [ObjectIdentifier: (task: any WorkerTask, error: SystemError?)] = [:]
    private var gathering = Round()
    /// Batches back from the worker whose waiters' steps have not all run, oldest first, each
    /// with its targets' errors and its next waiter: steps run a few at a time (`runReadySteps`)
    /// and each finds its error as it runs, so that taking a batch of thousands of waiters is no
    /// long loop turn, and each waiter's closure is released with its step, not all at once.
    private var ready: [(waiters: [Waiter], errors: [SystemError?], next: Int)] = []
    /// Batches sent and the fsyncs they held (read by the tests).
    private(set) var batches = 0
    private(set) var syncs = 0

    private let onWorkerFailure: (SystemError) -> Void
    /// False with `fsync: false`: syncs are skipped, files are still created on the worker.
    private let durable: Bool

    /// `inline`: requests are done on the caller's thread as they come, with no worker: where
    /// nothing in them waits on a disk (`fsync: false`), the two hand-offs a request costs
    /// (context switches, wake-ups of the loop) cost more than the renames themselves (issue 34).
    init(durable: Bool, nice: Int32 = 10, inline: Bool = false, onWorkerFailure: @escaping (SystemError) -> Void) {
        self.onWorkerFailure = onWorkerFailure
        self.durable = durable
        guard !inline else {
            state = .inline
            return
        }
        do {
            state = .idle(try SyncWorker(nice: nice))
        } catch {
            onWorkerFailure(error)
            state = .inline
        }
    }

    /// The descriptor that becomes readable when a batch is back; nil when there is no worker.
    var descriptor: Int32? {
        switch state {
        case .idle(let worker), .syncing(let worker, _): return worker.descriptor
        case .inline: return nil
        }
    }

    /// Whether nothing is waiting to be made durable or to take its next step.
    var isIdle: Bool {
        if case .syncing = state { return false }
        return gathering.waiters.isEmpty && !hasReadySteps
    }

    /// Whether requests are done as they come, on the caller's thread: a waiter's step runs
    /// within its `sync` call.
    var performsInline: Bool {
        if case .inline = state { return true }
        return false
    }

    /// Steps whose syncs are done wait to run: the loop should not sleep.
    var hasReadySteps: Bool { !ready.isEmpty }

    /// Steps asked for and not yet run: gathered, in the batch in flight, or back and waiting to
    /// run. A finish holds its `.part` open until its step runs (`JobRunner`'s descriptor shortage).
    var pendingSteps: Int {
        var count = gathering.waiters.count
        if case .syncing(_, let round) = state { count += round.waiters.count }
        for batch in ready { count += batch.waiters.count - batch.next }
        return count
    }

    /// Runs `then` once every target is done and durable, with the first error if one failed.
    func sync(_ targets: [Target], then: @escaping Completion) {
        let targets = durable || !targets.contains(where: \.isSync) ? targets : targets.filter { !$0.isSync }
        // Nothing to do (syncs under `fsync: false`): the step goes on at once.
        guard !targets.isEmpty else { return then(nil) }
        switch state {
        case .inline:
            var failure: SystemError?
            for target in targets where failure == nil {
                // One task asked for by several waiters (a batch of ends) runs once, as in a round.
                if case .task(let task) = target, let done = inlineTasks[ObjectIdentifier(task)] {
                    failure = done.error
                    continue
                }
                failure = target.performInline(durable: durable, fence: fence)
                if case .task(let task) = target { inlineTasks[ObjectIdentifier(task)] = (task, failure) }
            }
            syncs += targets.count
            then(failure)
        case .idle, .syncing:
            gathering.add(targets, then: then)
        }
    }

    /// Runs `task` on the caller's thread at once, as `sync` does without a worker, and `then` with
    /// its error: for work too small to be worth the worker's two hand-offs. Only while nothing is
    /// gathered, in flight or ready (`isIdle`), so that it cannot pass a step asked for before it.
    func performHere(_ task: any WorkerTask, then: Completion) {
        precondition(isIdle, "work done here would pass the steps waiting for the worker")
        syncs += 1
        then(Target.task(task).performInline(durable: durable, fence: fence))
    }

    /// Sends what was gathered when no batch is in flight; called once at the end of each loop turn.
    func flush() {
        // Inline, a batch's waiters are all served in the turn that asked: its files close now.
        inlineTasks.removeAll(keepingCapacity: true)
        guard case .idle(let worker) = state, !gathering.waiters.isEmpty else { return }
        let round = gathering
        gathering = Round()
        batches += 1
        syncs += round.targets.count
        worker.submit(SyncWorker.Batch(targets: round.targets.indices.map {
            round.targets[$0].workerTarget(durable: durable, exchange: round.exchanges[$0])
        }, fence: fence))
        state = .syncing(worker, round)
    }

    /// Forgets every step waiting here (a fenced agent takes none): a batch in flight ends on the
    /// worker, and what it answers is taken by no one.
    func abandon() {
        gathering = Round()
        ready.removeAll()
        inlineTasks.removeAll()
        if case .syncing(let worker, _) = state { state = .syncing(worker, Round()) }
    }

    /// Takes the batch the worker sent back: its steps become ready, and what was gathered
    /// meanwhile goes to the worker at once, with what `beforeNext` asks for once the batch's
    /// tasks have their answers (a `FinishBatch` holding ends for its batch).
    func collect(beforeNext: () -> Void = {}) {
        guard case .syncing(let worker, let round) = state else { return }
        guard let batch = worker.completed().first else { return }
        state = .idle(worker)
        // Every task of the batch takes its answer before the first step runs.
        let errors = batch.outcomes.indices.map { round.exchanges[$0]?.collect() ?? batch.outcomes[$0].error }
        if !round.waiters.isEmpty { ready.append((round.waiters, errors, 0)) }
        beforeNext()
        flush()
    }

    /// Nanoseconds a loop turn gives to ready steps (of all workers together, in the loop).
    static let readyStepsBudget: Int64 = 2_000_000

    /// Runs ready steps, in order, until `budget` nanoseconds have passed (at least one runs);
    /// the rest wait for the next loop turn. A step that asks for syncs adds to the next batch.
    func runReadySteps(budget: Int64 = GroupCommit.readyStepsBudget) {
        runReadySteps(until: MonotonicClock.nanoseconds() + budget)
    }

    /// Runs ready steps, in order, until the `deadline` on CLOCK_MONOTONIC (at least one runs).
    /// Each step's closure is released as it runs, so what it held (a job, its files) is freed
    /// within the budget, not all at once when the batch's last step has run.
    func runReadySteps(until deadline: Int64) {
        while !ready.isEmpty {
            let position = ready[0].next
            let waiter = ready[0].waiters[position]
            var error: SystemError?
            for target in waiter.targets where error == nil { error = ready[0].errors[target] }
            // Taken out before the step runs: a step may ask for syncs, or abandon every step (fenced).
            if position + 1 == ready[0].waiters.count {
                ready.removeFirst()
            } else {
                ready[0].waiters[position] = GroupCommit.ran
                ready[0].next = position + 1
            }
            waiter.then(error)
            if MonotonicClock.nanoseconds() >= deadline { break }
        }
    }
}
