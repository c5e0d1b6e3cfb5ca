import CLinux
import Glibc
import Synchronization

/// Hashes a `.part` file on a worker thread as it grows, so SHA-256 (about 1.8 GB/s) runs beside
/// the transfer instead of after it in the event loop. Measured with `make bench` on a 2 GiB file:
/// hashing in the write callback made dropfetch 1.48× curl's time (3.44 s against 2.33 s), which
/// matches SHA-256's cost; this is the one thread of the core, and it only reads the file.
///
/// The event loop calls `advance(to:)` after each write and `finish(size:)` once; the worker reads
/// with pread(2) on its own descriptor. It sleeps on an eventfd(2) when it has caught up. Under
/// `digest: none` with no `checksum=` there is nothing to hash and no digester is made.
final class FileDigester {
    /// What the loop and the worker share: descriptors, atomics and the result behind a lock,
    /// so that it is `Sendable` without help. The digests' state is the worker's alone.
    private final class Shared: Sendable {
        let file: FileDescriptor
        let wakeup: FileDescriptor
        /// Readable (an eventfd(2) in the loop's poll set) once `result` is written.
        let done: FileDescriptor
        let algorithms: [Checksum.Algorithm]
        /// Bytes of the file that hold valid data and may be hashed.
        let watermark: Atomic<Int64>
        let finished = Atomic<Bool>(false)
        /// Set by the worker once `result` is written, before `done` is signalled.
        let completed = Atomic<Bool>(false)
        let cancelled = Atomic<Bool>(false)
        let sleeping = Atomic<Bool>(false)
        /// Written by the worker before it ends; read by the loop after `done` or the join.
        let result = Locked<Result<[Checksum.Algorithm: String], SystemError>?>(nil)

        init(file: FileDescriptor, wakeup: FileDescriptor, done: FileDescriptor, algorithms: [Checksum.Algorithm],
             start: Int64) {
            self.file = file
            self.wakeup = wakeup
            self.done = done
            self.algorithms = algorithms
            watermark = Atomic(start)
        }
    }

    private let shared: Shared
    private var thread: pthread_t?

    /// Starts hashing `file` (opened for reading) from its first byte with each of `algorithms`;
    /// `available` bytes are already valid.
    init(file: FileDescriptor, algorithms: [Checksum.Algorithm], available: Int64) throws(SystemError) {
        let path = file.path
        let fd = try retryingEINTR("eventfd") { eventfd(0, Int32(EFD_CLOEXEC)) }
        let wakeup = FileDescriptor(rawValue: fd, path: "eventfd")
        let done = FileDescriptor(rawValue: try retryingEINTR("eventfd") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) },
                                  path: "eventfd")
        shared = Shared(file: file, wakeup: wakeup, done: done, algorithms: algorithms, start: available)
        let shared = shared
        thread = try WorkerThread.start("pthread_create", path: path) { FileDigester.work(shared) }
    }

    /// A digester given up (the data was thrown away) stops without reading further.
    deinit {
        shared.cancelled.store(true, ordering: .sequentiallyConsistent)
        _ = join()
    }

    /// Tells the worker that the file now holds `size` valid bytes; a sleeping worker is woken once
    /// `wakeStep` bytes wait for it (or at `finish`), not for each write of the transfer.
    func advance(to size: Int64) {
        shared.watermark.store(size, ordering: .sequentiallyConsistent)
        if size - wokenAt >= FileDigester.wakeStep, shared.sleeping.load(ordering: .sequentiallyConsistent) {
            wokenAt = size
            wake()
        }
    }

    /// Bytes that wait for a sleeping worker before it is woken: each wake-up costs two system calls
    /// and two context switches, and a write of the transfer brings at most 256 KiB.
    static let wakeStep: Int64 = 4 << 20
    /// The watermark when the worker was last woken.
    private var wokenAt: Int64 = 0

    /// Tells the worker the data ends at `size` bytes, without waiting for it: the descriptor it
    /// returns (an eventfd(2)) becomes readable once the digests are ready, so that the event loop
    /// polls for it instead of joining a thread that may still hash gigabytes (a 416 "already
    /// complete" hashes the whole file). Nil when they are ready already.
    func end(size: Int64) -> Int32? {
        guard thread != nil else { return nil }
        shared.watermark.store(size, ordering: .sequentiallyConsistent)
        shared.finished.store(true, ordering: .sequentiallyConsistent)
        wake()
        return shared.completed.load(ordering: .sequentiallyConsistent) ? nil : shared.done.rawValue
    }

    /// Waits for the worker to hash the first `size` bytes and returns the lower-case hex digest of
    /// each algorithm (at once after `end`'s descriptor was readable).
    func finish(size: Int64) -> Result<[Checksum.Algorithm: String], SystemError> {
        shared.watermark.store(size, ordering: .sequentiallyConsistent)
        return join() ?? .failure(SystemError(code: EIO, operation: "hash (worker ended early)", path: shared.file.path))
    }

    private func join() -> Result<[Checksum.Algorithm: String], SystemError>? {
        if let handle = thread {
            thread = nil
            shared.finished.store(true, ordering: .sequentiallyConsistent)
            wake()
            pthread_join(handle, nil)
        }
        return shared.result.withLock { $0 }
    }

    /// Wake-ups sent to the worker (read by the tests).
    private(set) var wakeups = 0
    /// Whether the worker is asleep on its eventfd, or about to be (read by the tests).
    var isSleeping: Bool { shared.sleeping.load(ordering: .sequentiallyConsistent) }

    private func wake() {
        wakeups += 1
        var one: UInt64 = 1
        _ = Glibc.write(shared.wakeup.rawValue, &one, 8)
    }

    /// The worker: hash up to the watermark, sleep when caught up, stop when finished; the `done`
    /// eventfd says it stopped.
    private static func work(_ shared: Shared) {
        defer {
            shared.completed.store(true, ordering: .sequentiallyConsistent)
            var one: UInt64 = 1
            _ = Glibc.write(shared.done.rawValue, &one, 8)
        }
        let digests = shared.algorithms.map { (algorithm: $0, digest: Digest($0)) }
        var hashed: Int64 = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while !shared.cancelled.load(ordering: .sequentiallyConsistent) {
            let target = shared.watermark.load(ordering: .sequentiallyConsistent)
            if hashed < target {
                let want = Int(min(Int64(chunk.count), target - hashed))
                let got = chunk.withUnsafeMutableBytes { buffer -> Int in
                    var count = 0
                    repeat { count = pread(shared.file.rawValue, buffer.baseAddress, want, off_t(hashed)) }
                    while count < 0 && dfl_errno() == EINTR
                    if count > 0 {
                        let data = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                        for entry in digests { entry.digest.update(data) }
                    }
                    return count
                }
                if got <= 0 {
                    let code = got == 0 ? EIO : dfl_errno()
                    let failure = SystemError(code: code, operation: "read (hashing)", path: shared.file.path)
                    shared.result.withLock { $0 = .failure(failure) }
                    return
                }
                hashed += Int64(got)
                continue
            }
            if shared.finished.load(ordering: .sequentiallyConsistent) {
                if hashed >= shared.watermark.load(ordering: .sequentiallyConsistent) {
                    let values = DownloadDigest.finalize(digests)
                    shared.result.withLock { $0 = .success(values) }
                    return
                }
                continue
            }
            shared.sleeping.store(true, ordering: .sequentiallyConsistent)
            if hashed == shared.watermark.load(ordering: .sequentiallyConsistent),
               !shared.finished.load(ordering: .sequentiallyConsistent) {
                var value: UInt64 = 0
                _ = Glibc.read(shared.wakeup.rawValue, &value, 8)
            }
            shared.sleeping.store(false, ordering: .sequentiallyConsistent)
        }
    }
}
