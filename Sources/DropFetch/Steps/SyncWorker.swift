import CLinux
import Glibc
import Synchronization

/// A thread that runs batches of fsync(2) and fdatasync(2), creates the files whose inode
/// allocation can take milliseconds, and performs `WorkerRequest`s (claims, reservations,
/// renames), for the event loop, so that none of them blocks a loop turn (group commit,
/// docs/architecture.md).
///
/// The hand-off: a batch is a `Sendable` value (its targets hold descriptors as `Sendable`
/// handles, requests as `Sendable` values; its outcomes are values). `submit` appends it to a
/// request queue behind a `Locked` (a pthread mutex ThreadSanitizer can follow) and counts up an
/// eventfd that the worker blocks on while the queue is empty; the worker appends each finished
/// batch to a response queue behind another and counts up a second eventfd, which is in the
/// loop's poll set (`descriptor`). Nothing else is shared, and the compiler checks all of it:
/// there is no `@unchecked Sendable` here (`Locked`'s is audited in its own file).
final class SyncWorker {
    /// One thing to do, and the path it is about (for messages, or the file to create; empty for a request).
    struct Target: Sendable {
        enum Action: Sendable {
            /// fdatasync(2) of the file when `dataOnly`, else fsync(2); the handle keeps the
            /// descriptor open for as long as the worker holds the batch.
            case syncFile(FileDescriptor, dataOnly: Bool)
            /// fsync(2) of the folder, so that the names created or renamed in it last.
            case syncFolder(DirectoryHandle)
            /// A new file at `path` (O_EXCL) holding `bytes`, fsynced when `durable` (AtomicFile.writeTemp).
            case create(bytes: [UInt8], mode: UInt32, durable: Bool)
            /// The file at `path` replaced by one holding `bytes`, not synced (AtomicFile.write).
            case replace(bytes: [UInt8], mode: UInt32)
            /// A step of the loop's done whole on the worker: a `WorkerTask`'s request, which puts
            /// its typed answer where the task takes it back (`WorkerExchange`).
            case run(@Sendable () -> Void)
        }

        let action: Action
        let path: String
    }

    /// What a target came to.
    enum Outcome: Sendable {
        /// Done, and durable where asked.
        case done
        case failed(SystemError)

        /// The target's error; nil for a request run, whose answer its task judges.
        var error: SystemError? {
            if case .failed(let error) = self { return error }
            return nil
        }
    }

    /// One batch: the loop gives the targets, the worker the outcomes (one per target, in order).
    struct Batch: Sendable {
        let targets: [Target]
        /// Asked before each target: a fenced agent's steps are not done (DESIGN.md §10). A lapsed
        /// lease refuses nothing here: it holds no job, so only the metrics file, the status page
        /// and the quota ledger's exchange can be on their way.
        let fence: Fence?
        /// Empty until the worker has done the batch.
        var outcomes: [Outcome] = []

        init(targets: [Target], fence: Fence? = nil) {
            self.targets = targets
            self.fence = fence
        }
    }

    /// What the loop and the worker share: the two queues, each behind its lock, and the two
    /// eventfds. Immutable itself; `Sendable` without help.
    private final class Channel: Sendable {
        struct Requests {
            var batches: [Batch] = []
            /// Set by deinit: the worker ends after the batch it is on.
            var ending = false
        }

        let requests = Locked(Requests())
        let responses = Locked<[Batch]>([])
        /// Counted up at each submit (and at the end); the worker blocks reading it while there is
        /// nothing to do. A count it has not read yet wakes it at once, so no wake-up is lost
        /// between its look at the queue and its read.
        let wakeup: FileDescriptor
        /// Counted up at each finished batch, reset by `completed`: readable while batches wait
        /// (non-blocking, in the loop's poll set).
        let done: FileDescriptor
        let nice: Int32

        init(nice: Int32) throws(SystemError) {
            wakeup = FileDescriptor(rawValue: try retryingEINTR("eventfd (sync worker)") { eventfd(0, Int32(EFD_CLOEXEC)) },
                                    path: "eventfd (sync worker)")
            done = FileDescriptor(rawValue: try retryingEINTR("eventfd (sync worker)") {
                eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
            }, path: "eventfd (sync worker)")
            self.nice = nice
        }

        /// Adds one to an eventfd's count. It fails only past 2⁶⁴−2 unread counts (EAGAIN on the
        /// non-blocking one), which a reader resets long before.
        static func signal(_ eventfd: FileDescriptor) {
            while eventfd_write(eventfd.rawValue, 1) != 0, dfl_errno() == EINTR {}
        }

        private enum Next {
            case batch(Batch)
            case wait
            case end
        }

        /// The next batch, in submission order, waiting for one; nil once the worker is to end.
        func next() -> Batch? {
            while true {
                let next: Next = requests.withLock { queue in
                    if queue.ending { return .end }
                    return queue.batches.isEmpty ? .wait : .batch(queue.batches.removeFirst())
                }
                switch next {
                case .batch(let batch): return batch
                case .end: return nil
                case .wait:
                    var count: eventfd_t = 0
                    // Blocks until a submit (or the end) counts up; EINTR only looks again.
                    _ = eventfd_read(wakeup.rawValue, &count)
                }
            }
        }

        /// Hands a finished batch back and wakes the loop. The worker keeps no reference to it: the
        /// loop then holds the only one, and a request it takes apart item by item (`JobFinish`) is
        /// neither copied whole nor freed here, off the loop, once the worker moves on.
        func finished(_ batch: inout Batch?) {
            responses.withLock { $0.append(batch.take()!) }
            Channel.signal(done)
        }
    }

    private let channel: Channel
    private var thread: pthread_t?

    /// Becomes readable when a batch is back (for curl_multi_poll(3)'s extra descriptors).
    var descriptor: Int32 { channel.done.rawValue }

    /// `nice` is the worker thread's niceness (setpriority(2) of the thread): 10 for throughput
    /// work that must yield to the loop, 0 for steps a new transfer waits for.
    init(nice: Int32 = 10) throws(SystemError) {
        let channel = try Channel(nice: nice)
        self.channel = channel
        // With no thread, deinit joins nothing; the eventfds close with the channel.
        thread = try WorkerThread.start("pthread_create (sync worker)") { SyncWorker.work(channel) }
    }

    /// Ends the worker after the batch it is on, and waits for it: batches it has not begun are
    /// dropped unperformed, and those not collected are released with the queues.
    deinit {
        channel.requests.withLock { $0.ending = true }
        Channel.signal(channel.wakeup)
        if let thread { pthread_join(thread, nil) }
    }

    /// Queues a batch for the worker; `completed()` returns it once every target was done.
    func submit(_ batch: Batch) {
        channel.requests.withLock { $0.batches.append(batch) }
        Channel.signal(channel.wakeup)
    }

    /// The batches the worker has finished since the last call, in the order they were submitted.
    /// Resets `descriptor` first, then empties the queue: a batch that comes back in between is
    /// taken now and leaves the descriptor readable for a turn that finds nothing, never the
    /// other way round (a batch waiting with the descriptor quiet).
    func completed() -> [Batch] {
        var count: eventfd_t = 0
        while eventfd_read(channel.done.rawValue, &count) != 0, dfl_errno() == EINTR {}
        return channel.responses.withLock { queue in
            var taken: [Batch] = []
            swap(&taken, &queue)
            return taken
        }
    }

    /// How long a worker runs targets before it yields its CPU to a waiting loop.
    static let yieldAfter: Int64 = 500_000

    /// The worker's loop: take a batch, do each target, hand it back; end when deinit says so.
    /// A worker for throughput runs at a lower priority than the loop (nice 10), whose turns it
    /// must not delay on a busy machine.
    private static func work(_ channel: Channel) {
        // A batch thread: waking it (the loop counting up its eventfd) does not preempt the loop,
        // and it yields (sched_yield(2)) once it has run `yieldAfter` in a row, so a batch of
        // creations (each walking ext4's inode tables) does not keep the loop off a CPU it shares.
        _ = dfl_set_thread_batch()
        _ = dfl_set_thread_nice(channel.nice)
        var batch = channel.next()
        while batch != nil {
            batch!.outcomes = outcomes(of: batch!.targets, fence: batch!.fence)
            channel.finished(&batch)
            batch = channel.next()
        }
    }

    /// Each target done in order on the calling thread.
    private static func outcomes(of targets: [Target], fence: Fence?) -> [Outcome] {
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(targets.count)
        var ranSince = MonotonicClock.nanoseconds()
        for target in targets {
            if let fence, fence.isBroken {
                outcomes.append(.failed(SyncWorker.fenced(target.path)))
                continue
            }
            outcomes.append(perform(target))
            // After a stretch of half a millisecond a loop waiting for this CPU runs now rather
            // than at the next tick (up to 4 ms); cheap targets do not pay a system call each.
            let now = MonotonicClock.nanoseconds()
            if now - ranSince >= SyncWorker.yieldAfter {
                sched_yield()
                ranSince = MonotonicClock.nanoseconds()
            }
        }
        return outcomes
    }

    /// The error of a step a fenced agent did not take.
    static func fenced(_ path: String) -> SystemError {
        SystemError(code: ESTALE, operation: "act on a job after this agent was fenced (its lease ran out)", path: path)
    }

    /// One target on the calling thread.
    static func perform(_ target: Target) -> Outcome {
        do {
            switch target.action {
            case .syncFile(let file, let dataOnly):
                _ = try retryingEINTR(dataOnly ? "fdatasync" : "fsync", target.path) {
                    dataOnly ? fdatasync(file.rawValue) : fsync(file.rawValue)
                }
            case .syncFolder(let folder):
                _ = try retryingEINTR("fsync", target.path) { fsync(folder.descriptor) }
            case .create(let bytes, let mode, let durable):
                try AtomicFile.writeTemp(bytes, at: target.path, mode: mode, durable: durable)
            case .replace(let bytes, let mode):
                try AtomicFile.write(bytes, to: target.path, durable: false, mode: mode)
            case .run(let work):
                work()
            }
            return .done
        } catch {
            return .failed(error)
        }
    }
}
