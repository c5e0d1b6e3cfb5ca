import CLinux
import Glibc

/// A thread that runs batches of fsync(2) and fdatasync(2), creates the files whose inode
/// allocation can take milliseconds, and runs `WorkerTask`s (claims, reservations, renames), for
/// the event loop, so that none of them blocks a loop turn (group commit, docs/architecture.md).
///
/// A batch goes to the worker and comes back through two pipes as a retained pointer: the loop
/// does not touch a batch between `submit` and `completed`, the worker not before or after; the
/// pipe's write and read order the two. No lock is shared.
final class SyncWorker {
    /// One thing to do, and the path it is about (for messages, or the file to create; empty for a task).
    struct Target {
        enum Action {
            /// fdatasync(2) when `dataOnly`, else fsync(2); the caller keeps the descriptor open
            /// until the batch is back.
            case sync(descriptor: Int32, dataOnly: Bool)
            /// A new file at `path` (O_EXCL) holding `bytes`, fsynced when `durable` (AtomicFile.writeTemp).
            case create(bytes: [UInt8], mode: UInt32, durable: Bool)
            /// The file at `path` replaced by one holding `bytes`, not synced (AtomicFile.write).
            case replace(bytes: [UInt8], mode: UInt32)
            /// A step of the loop's done whole on the worker (`WorkerTask`).
            case run(any WorkerTask)
        }

        let action: Action
        let path: String
    }

    /// One batch: the loop fills `targets`, the worker `errors` (one per target, nil when durable).
    final class Batch: @unchecked Sendable {
        let targets: [Target]
        var errors: [SystemError?]

        init(targets: [Target]) {
            self.targets = targets
            errors = Array(repeating: nil, count: targets.count)
        }
    }

    private let requests: (read: Int32, write: Int32)
    private let responses: (read: Int32, write: Int32)
    private var thread: pthread_t?

    /// Becomes readable when a batch is back (for curl_multi_poll(3)'s extra descriptors).
    var descriptor: Int32 { responses.read }

    /// `nice` is the worker thread's niceness (setpriority(2) of the thread): 10 for throughput
    /// work that must yield to the loop, 0 for steps a new transfer waits for.
    init(nice: Int32 = 10) throws(SystemError) {
        requests = try SyncWorker.makePipe()
        do {
            responses = try SyncWorker.makePipe()
        } catch {
            Glibc.close(requests.read)
            Glibc.close(requests.write)
            throw error
        }
        _ = fcntl(responses.read, F_SETFL, fcntl(responses.read, F_GETFL) | O_NONBLOCK)
        let ends = WorkerEnds(requests: requests.read, responses: responses.write, nice: nice)
        let context = Unmanaged.passRetained(ends).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { raw in
            let ends = Unmanaged<WorkerEnds>.fromOpaque(raw!).takeRetainedValue()
            SyncWorker.work(requests: ends.requests, responses: ends.responses, nice: ends.nice)
            return nil
        }, context)
        guard status == 0 else {
            // deinit closes the pipes; with no thread it joins nothing.
            Unmanaged<WorkerEnds>.fromOpaque(context).release()
            throw SystemError(code: status, operation: "pthread_create (sync worker)")
        }
        thread = handle
    }

    /// Closing the request pipe ends the worker after the batch it is on; the loop waits for it.
    deinit {
        Glibc.close(requests.write)
        if let thread {
            pthread_join(thread, nil)
            while readBatch() != nil {}
        }
        for fd in [requests.read, responses.read, responses.write] { Glibc.close(fd) }
    }

    /// Hands a batch to the worker with write(2) of its pointer; `completed()` returns it once
    /// every target was done. Throws when the worker cannot be reached (the batch is not sent).
    func submit(_ batch: Batch) throws(SystemError) {
        let retained = Unmanaged.passRetained(batch)
        var pointer = UInt(bitPattern: retained.toOpaque())
        // 8 bytes: below PIPE_BUF, so written whole; the worker drains the pipe, so this never waits long.
        do throws(SystemError) {
            let written = try retryingEINTR("write (sync worker)") { Glibc.write(requests.write, &pointer, MemoryLayout<UInt>.size) }
            if written != MemoryLayout<UInt>.size { throw SystemError(code: EIO, operation: "write (sync worker)") }
        } catch {
            retained.release()
            throw error
        }
    }

    /// The batches the worker has finished since the last call (read(2) of their pointers), in the
    /// order they were submitted.
    func completed() -> [Batch] {
        var done: [Batch] = []
        while let batch = readBatch() { done.append(batch) }
        return done
    }

    private func readBatch() -> Batch? {
        var pointer: UInt = 0
        let count = (try? retryingEINTR("read (sync worker)") { Glibc.read(responses.read, &pointer, MemoryLayout<UInt>.size) }) ?? 0
        guard count == MemoryLayout<UInt>.size, let raw = UnsafeMutableRawPointer(bitPattern: pointer) else { return nil }
        return Unmanaged<Batch>.fromOpaque(raw).takeRetainedValue()
    }

    /// How long a worker runs targets before it yields its CPU to a waiting loop.
    static let yieldAfter: Int64 = 500_000

    /// The worker's loop: take a batch, sync each target, send it back; end when the pipe closes.
    /// A worker for throughput runs at a lower priority than the loop (nice 10), whose turns it
    /// must not delay on a busy machine.
    private static func work(requests: Int32, responses: Int32, nice: Int32) {
        // A batch thread: waking it (the loop writing a batch's pointer) does not preempt the loop,
        // and it yields (sched_yield(2)) once it has run `yieldAfter` in a row, so a batch of
        // creations (each walking ext4's inode tables) does not keep the loop off a CPU it shares.
        _ = dfl_set_thread_batch()
        _ = dfl_set_thread_nice(nice)
        while true {
            var pointer: UInt = 0
            let count = Glibc.read(requests, &pointer, MemoryLayout<UInt>.size)
            if count < 0, dfl_errno() == EINTR { continue }
            guard count == MemoryLayout<UInt>.size, let raw = UnsafeMutableRawPointer(bitPattern: pointer) else { return }
            let batch = Unmanaged<Batch>.fromOpaque(raw).takeUnretainedValue()
            var ranSince = MonotonicClock.nanoseconds()
            for (index, target) in batch.targets.enumerated() {
                batch.errors[index] = perform(target)
                // After a stretch of half a millisecond a loop waiting for this CPU runs now rather
                // than at the next tick (up to 4 ms); cheap targets do not pay a system call each.
                let now = MonotonicClock.nanoseconds()
                if now - ranSince >= SyncWorker.yieldAfter {
                    sched_yield()
                    ranSince = MonotonicClock.nanoseconds()
                }
            }
            var back = pointer
            _ = try? retryingEINTR("write (sync worker)") { Glibc.write(responses, &back, MemoryLayout<UInt>.size) }
        }
    }

    /// One target on the calling thread; nil when it is done (and durable where asked).
    static func perform(_ target: Target) -> SystemError? {
        do {
            switch target.action {
            case .sync(let descriptor, let dataOnly):
                _ = try retryingEINTR(dataOnly ? "fdatasync" : "fsync", target.path) {
                    dataOnly ? fdatasync(descriptor) : fsync(descriptor)
                }
            case .create(let bytes, let mode, let durable):
                try AtomicFile.writeTemp(bytes, at: target.path, mode: mode, durable: durable)
            case .replace(let bytes, let mode):
                try AtomicFile.write(bytes, to: target.path, durable: false, mode: mode)
            case .run(let task):
                return task.perform()
            }
            return nil
        } catch {
            return error
        }
    }

    private static func makePipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try retryingEINTR("pipe2") { dfl_pipe_cloexec(&fds) }
        return (fds[0], fds[1])
    }

    /// The worker's ends of the pipes, passed to the new thread.
    private final class WorkerEnds: @unchecked Sendable {
        let requests: Int32
        let responses: Int32
        let nice: Int32

        init(requests: Int32, responses: Int32, nice: Int32) {
            self.requests = requests
            self.responses = responses
            self.nice = nice
        }
    }
}
