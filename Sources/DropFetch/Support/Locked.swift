import Glibc

/// A value behind a pthread mutex (pthread_mutex_lock(3)), shared by the loop and a worker thread
/// (the SyncWorker queues, a digest's result); the same `withLock` as Synchronization's `Mutex`,
/// which it replaces because ThreadSanitizer (`make test-tsan`) cannot follow a contended `Mutex`
/// on Linux: its slow path hands the lock over in the kernel (FUTEX_LOCK_PI, in the uninstrumented
/// libswiftSynchronization), so the accesses it orders are reported as races; pthread_mutex_lock
/// is one TSan intercepts.
///
/// `@unchecked Sendable`: `value` is read and written only inside `withLock`, under the mutex,
/// which orders every access of one thread before the next thread's.
final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
