import Glibc
import Synchronization

/// Whether this agent may still act on its work folder's jobs (DESIGN.md §10 Fencing): only while
/// its lease (`WorkLease`) runs, counted on CLOCK_BOOTTIME from the start of the last renewal that
/// ended in time. Once broken it stays broken: the loop, the workers and the write callback ask it
/// before every step that another agent could not undo (a byte written to a `.part`, a claim, a
/// publication, a status file, a filing), and an agent that re-joins gets a new one.
final class Fence: Sendable {
    /// The lease's end, in CLOCK_BOOTTIME nanoseconds (a suspended host's lease runs out too).
    private let validUntil: Atomic<Int64>
    private let broken = Atomic<Bool>(false)
    /// Why it broke, for the one warning the loop logs.
    private let cause = Locked<String?>(nil)
    /// The lease's generation: one more each time an agent of this name takes its work folder.
    let epoch: UInt64

    init(epoch: UInt64, validUntil: Int64) {
        self.epoch = epoch
        self.validUntil = Atomic(validUntil)
    }

    /// A fence that always holds: for steps run without an agent (control commands, tests).
    static func permanentlyOpen() -> Fence {
        Fence(epoch: 0, validUntil: .max)
    }

    /// True while the lease runs; the first call after it ran out breaks the fence for good.
    func permits() -> Bool {
        if broken.load(ordering: .acquiring) { return false }
        let until = validUntil.load(ordering: .acquiring)
        if until == .max || Fence.now() < until { return true }
        breakFence("the lease on the work folder was not renewed in time")
        return false
    }

    var isBroken: Bool { !permits() }

    /// Why the fence broke; nil while it holds.
    var brokenBecause: String? {
        guard broken.load(ordering: .acquiring) else { return nil }
        return cause.withLock { $0 }
    }

    /// Extends the lease to `start + lease` after a renewal that began at `start`, but only if it
    /// ended while the lease still ran: a renewal that ended late proves nothing (an adopter may
    /// already count from the write before it). Returns whether the fence still holds.
    @discardableResult
    func renewed(startedAt start: Int64, lease: Int64) -> Bool {
        let now = Fence.now()
        while true {
            if broken.load(ordering: .acquiring) { return false }
            let until = validUntil.load(ordering: .acquiring)
            guard now < until else {
                breakFence("the lease renewal ended \(Fence.milliseconds(now - until)) ms after the lease ran out")
                return false
            }
            let (sum, overflow) = start.addingReportingOverflow(lease)
            let next = max(until, overflow ? .max - 1 : sum)
            if validUntil.compareExchange(expected: until, desired: next, ordering: .acquiringAndReleasing).exchanged {
                return true
            }
        }
    }

    /// Breaks the fence (a renewal failed, the lock is gone); the first cause given is kept.
    func breakFence(_ reason: String) {
        cause.withLock { if $0 == nil { $0 = reason } }
        broken.store(true, ordering: .releasing)
    }

    /// When the lease runs out, in milliseconds from now (0 once broken); nil when it never does.
    func millisecondsLeft() -> Int64? {
        if broken.load(ordering: .acquiring) { return 0 }
        let until = validUntil.load(ordering: .acquiring)
        if until == .max { return nil }
        return max(0, Fence.milliseconds(until - Fence.now()))
    }

    /// CLOCK_BOOTTIME in nanoseconds: monotonic, and it runs on while the host is suspended.
    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    private static func milliseconds(_ nanoseconds: Int64) -> Int64 {
        (nanoseconds + 999_999) / 1_000_000
    }
}
