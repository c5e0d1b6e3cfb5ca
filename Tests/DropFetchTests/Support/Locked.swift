import Glibc

/// A value behind a pthread mutex, for state that the test servers' threads share; the same
/// `withLock` as Synchronization's `Mutex`. ThreadSanitizer (`make test-tsan`) cannot follow a
/// contended `Mutex` on Linux: its slow path hands the lock over in the kernel (FUTEX_LOCK_PI, in
/// the uninstrumented libswiftSynchronization), so the accesses it orders are reported as races.
/// pthread_mutex_lock(3) is one TSan intercepts.
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
