import Glibc
import Synchronization

/// Whether this agent may still act on its work folder's jobs (DESIGN.md §10 Fencing): only while
/// its lease (`WorkLease`) runs, counted on CLOCK_BOOTTIME from the start of the last renewal that
/// ended in time. Once broken it stays broken: the loop, the workers and the write callback ask it
/// before every step that another agent could not undo (a byte written to a `.part`, a claim, a
/// publication, a status file, a filing), and an agent that re-joins gets a new one.
///
/// An agent that holds no job lets its lease lapse (`Phase.dormant`): it then acts on nothing, and
/// takes the lease again (`Phase.waking`, a renewal that went through) before its next claim or
/// adoption, so that an idle daemon writes and syncs nothing (issue 34, P5).
final class Fence: Sendable {
    /// Where the lease stands besides its end. The loop offers a lapse and takes it back, and asks a
    /// dormant lease to wake (`offerLapse`, `prepareToAct`); the lease thread makes it dormant and,
    /// once a renewal went through, active again (`lapse`, `resumed`).
    enum Phase: UInt8, AtomicRepresentable {
        /// Renewed every quarter lease.
        case active
        /// The loop holds no job: the lease thread lets the lease lapse after a grace, unless the
        /// loop takes it back first.
        case lapsing
        /// Lapsed on purpose while no job was held: nothing may be done; not a fence.
        case dormant
        /// The loop asked for the lease again; it acts once a renewal went through (`resumed`).
        case waking
    }

    /// The lease's end, in CLOCK_BOOTTIME nanoseconds (a suspended host's lease runs out too).
    private let validUntil: Atomic<Int64>
    private let broken = Atomic<Bool>(false)
    private let phaseValue = Atomic<Phase>(.active)
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

    /// True while the lease runs; the first call after it ran out breaks the fence for good. A
    /// dormant lease (or one waking) permits nothing and is not broken.
    func permits() -> Bool {
        standing == .holds
    }

    /// Broken for good; a dormant lease is not.
    var isBroken: Bool { standing == .broken }

    private enum Standing { case holds, dormant, broken }

    private var standing: Standing {
        if broken.load(ordering: .acquiring) { return .broken }
        switch phaseValue.load(ordering: .acquiring) {
        case .dormant, .waking: return .dormant
        case .active, .lapsing: break
        }
        let until = validUntil.load(ordering: .acquiring)
        if until == .max || Fence.now() < until { return .holds }
        breakFence("the lease on the work folder was not renewed in time")
        return .broken
    }

    /// The lease's phase now (another thread may move it right after).
    var phase: Phase { phaseValue.load(ordering: .acquiring) }

    /// The loop holds no job: the lease may lapse (`active` → `lapsing`). Returns whether that
    /// changed the phase, so that the lease thread is told once.
    func offerLapse() -> Bool {
        phaseValue.compareExchange(expected: .active, desired: .lapsing, ordering: .acquiringAndReleasing).exchanged
    }

    /// Asked by the loop before it claims or adopts a job: true when it may act now (a lapse on
    /// offer is taken back); false while the lease is dormant, which is then asked for again
    /// (`wakeRequested` true: the lease thread must be told), or waking.
    func prepareToAct() -> (ready: Bool, wakeRequested: Bool) {
        while true {
            let current = phaseValue.load(ordering: .acquiring)
            let next: Phase
            switch current {
            case .active: return (true, false)
            case .waking: return (false, false)
            case .lapsing: next = .active
            case .dormant: next = .waking
            }
            if phaseValue.compareExchange(expected: current, desired: next, ordering: .acquiringAndReleasing).exchanged {
                return (next == .active, next == .waking)
            }
        }
    }

    /// The lease thread lets the lease lapse (`lapsing` → `dormant`), unless the loop took it back.
    func lapse() -> Bool {
        phaseValue.compareExchange(expected: .lapsing, desired: .dormant, ordering: .acquiringAndReleasing).exchanged
    }

    /// A renewal that began at `start` went through while waking: the lease runs from it again
    /// (a lapse held no job, so nothing another agent counted on is extended). False when broken,
    /// or when the renewal ended after the lease it began would have run out (which breaks it).
    func resumed(startedAt start: Int64, lease: Int64) -> Bool {
        if broken.load(ordering: .acquiring) { return false }
        let (sum, overflow) = start.addingReportingOverflow(lease)
        let end = overflow ? .max - 1 : sum
        let now = Fence.now()
        guard now < end else {
            breakFence("the lease renewal after a lapse ended \(Fence.milliseconds(now - end)) ms after that lease ran out")
            return false
        }
        // The end first: once the phase says active, `standing` reads it.
        validUntil.store(end, ordering: .releasing)
        return phaseValue.compareExchange(expected: .waking, desired: .active, ordering: .acquiringAndReleasing).exchanged
    }

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

    /// When the lease runs out, in milliseconds from now (0 once broken); nil when it never does, or
    /// when it is let lapse (the agent holds no job).
    func millisecondsLeft() -> Int64? {
        if broken.load(ordering: .acquiring) { return 0 }
        // Offered to lapse, the lease guards no job: the loop need not wake for its end.
        switch phaseValue.load(ordering: .acquiring) {
        case .lapsing, .dormant, .waking: return nil
        case .active: break
        }
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
