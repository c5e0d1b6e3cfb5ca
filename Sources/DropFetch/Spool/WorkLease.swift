import CLinux
import Glibc
import Logging
import Synchronization

/// This agent's lease on its work folder (DESIGN.md §10 Fencing): `work/<agent>/.lease` rewritten
/// in place (pwrite(2) + fdatasync(2)) every quarter lease by a thread of its own, so that it
/// reaches the shared file system's server. A renewal that fails, or that ends after the lease ran
/// out, breaks the `Fence` for good; another agent adopts the folder's jobs only once the file's
/// bytes stayed the same for a lease and a margin of its own clock (`LeaseWatch`), by which time
/// this agent has stopped acting on them. After the fence broke the thread keeps trying, once a
/// second, so that the loop learns when the file system answers again and can re-join.
/// An agent that holds no job lets the lease lapse (`mayLapse`): one last record says so
/// (`idle=1`), and nothing is written until the loop asks for the lease again (`readyToAct`).
final class WorkLease {
    /// What the lease file says: who holds the folder, and a renewal count that changes each time.
    struct Record: Sendable, Equatable {
        var epoch: UInt64
        var renewal: UInt64 = 0
        var leaseMilliseconds: Int64
        var host: String
        var boot: String
        /// /proc/self/ns/pid: a pid means the same process only within one pid namespace.
        var pidNamespace: String
        var pid: Int32
        /// The process's start time (/proc/<pid>/stat field 22): a pid reused later is another process.
        var started: UInt64
        /// The agent held no job when it wrote this and lets the lease lapse (`Fence.Phase.dormant`):
        /// a late lease that says so is an idle agent's, not a fenced one's. Always written (0 or
        /// 1), so that a record is never shorter than the one it overwrites in place.
        var idle = false

        func encoded() -> [UInt8] {
            Array("dropfetch-lease 1 epoch=\(epoch) renewal=\(renewal) lease_ms=\(leaseMilliseconds) host=\(host) boot=\(boot) pidns=\(pidNamespace) pid=\(pid) started=\(started) idle=\(idle ? 1 : 0)\n".utf8)
        }

        /// Parses a lease file's line; nil for anything else (a peer's garbage included).
        static func parse(_ bytes: [UInt8]) -> Record? {
            let text = String(decoding: bytes.prefix(1024).prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            let fields = text.split(separator: " ")
            guard fields.count >= 2, fields[0] == "dropfetch-lease", fields[1] == "1" else { return nil }
            var values: [Substring: Substring] = [:]
            for field in fields.dropFirst(2) {
                guard let equals = field.firstIndex(of: "=") else { return nil }
                values[field[..<equals]] = field[field.index(after: equals)...]
            }
            guard let epoch = values["epoch"].flatMap({ UInt64($0) }), let renewal = values["renewal"].flatMap({ UInt64($0) }),
                  let lease = values["lease_ms"].flatMap({ Int64($0) }), let pid = values["pid"].flatMap({ Int32($0) }),
                  let started = values["started"].flatMap({ UInt64($0) }) else { return nil }
            return Record(epoch: epoch, renewal: renewal, leaseMilliseconds: lease, host: String(values["host"] ?? ""),
                          boot: String(values["boot"] ?? ""), pidNamespace: String(values["pidns"] ?? ""), pid: pid,
                          started: started, idle: values["idle"] == "1")
        }

        /// This process, as a lease names it.
        static func ofThisProcess(epoch: UInt64, lease: Int64) -> Record {
            Record(epoch: epoch, leaseMilliseconds: lease, host: Agent.hostName(), boot: BootID.current ?? "",
                   pidNamespace: ProcessIdentity.pidNamespace() ?? "", pid: getpid(),
                   started: ProcessIdentity.startTime(of: getpid()) ?? 0)
        }
    }

    /// What the thread and the loop share.
    private final class Shared: Sendable {
        let file: FileDescriptor
        let fence: Fence
        let leaseNanoseconds: Int64
        let logger: Logger
        /// Readable when the fence broke or the file system answered again after it broke.
        let wakeup: FileDescriptor
        /// Wakes the thread from its wait between renewals: deinit, a lapse offered, the lease asked for again.
        let nudge: FileDescriptor
        /// `work/<agent>/.lock`, looked at after each renewal where a lost lock can be seen (FUSE).
        let lockPath: String?
        let ending = Atomic<Bool>(false)
        /// Set once a renewal went through after the fence broke.
        let answersAgain = Atomic<Bool>(false)
        let record: Locked<Record>

        init(file: FileDescriptor, fence: Fence, lease: Int64, logger: Logger, record: Record,
             lockPath: String?) throws(SystemError) {
            self.file = file
            self.lockPath = lockPath
            self.fence = fence
            leaseNanoseconds = lease
            self.logger = logger
            self.record = Locked(record)
            wakeup = FileDescriptor(rawValue: try retryingEINTR("eventfd (lease)") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) },
                                    path: "eventfd")
            nudge = FileDescriptor(rawValue: try retryingEINTR("eventfd (lease)") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) },
                                  path: "eventfd")
        }
    }

    private let shared: Shared
    private var thread: pthread_t?
    var fence: Fence { shared.fence }
    var epoch: UInt64 { shared.fence.epoch }
    /// Readable (for curl_multi_poll(3)) when the fence broke or the file system answers again.
    var descriptor: Int32 { shared.wakeup.rawValue }
    /// True once a renewal went through after the fence broke: the agent may re-join.
    var answersAgain: Bool { shared.answersAgain.load(ordering: .acquiring) }

    /// Takes the lease of the work folder `folder` (whose flock(2) this agent holds): the next
    /// epoch after the one the file names, written and synced before this returns, then renewed
    /// every quarter of `lease`.
    init(folder: String, lease: Duration, logger: Logger) throws(SystemError) {
        let path = FileSystem.join(folder, WorkLease.fileName)
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o644)
        let previous = (try? file.read(upTo: 1024, expected: 256)).flatMap(Record.parse)
        let leaseMilliseconds = Int64(lease.milliseconds)
        let record = Record.ofThisProcess(epoch: (previous?.epoch ?? 0) &+ 1, lease: leaseMilliseconds)
        let start = Fence.now()
        let bytes = record.encoded()
        try file.truncate(to: 0)
        try file.write(bytes, at: 0)
        try file.syncData()
        let fence = Fence(epoch: record.epoch, validUntil: start + leaseMilliseconds * 1_000_000)
        let lockPath = folder + "/.lock"
        shared = try Shared(file: file, fence: fence, lease: leaseMilliseconds * 1_000_000, logger: logger, record: record,
                            lockPath: WorkLease.isFUSE(folder) ? lockPath : nil)
        let shared = self.shared
        thread = try WorkerThread.start("pthread_create (lease)", path: path) { WorkLease.renew(shared) }
    }

    /// Stops the renewals. The thread is not waited for: it may be blocked in a write to an
    /// unreachable file system, and it ends by itself once that returns.
    deinit {
        shared.ending.store(true, ordering: .releasing)
        WorkLease.signal(shared.nudge)
        if let thread { pthread_detach(thread) }
    }

    /// The loop holds no job, claim or step: the lease may lapse, after `lapseGrace` unless the
    /// loop acts again first (`readyToAct`).
    func mayLapse() {
        if shared.fence.offerLapse() { WorkLease.signal(shared.nudge) }
    }

    /// Whether the loop may claim or adopt a job now. A dormant lease is asked for again, and the
    /// wake-up descriptor turns readable once a renewal went through (or the fence broke).
    func readyToAct() -> Bool {
        // Active: the loop's check of the fence at each turn's start stands (no clock read a claim).
        if shared.fence.phase == .active { return true }
        let (ready, wake) = shared.fence.prepareToAct()
        if wake { WorkLease.signal(shared.nudge) }
        // A lease taken back from a lapse may have run out meanwhile: the loop did not wake for its end.
        return ready && shared.fence.permits()
    }

    /// Empties the wake-up descriptor (after the loop saw it readable).
    func drain() {
        var count: eventfd_t = 0
        while eventfd_read(shared.wakeup.rawValue, &count) != 0, dfl_errno() == EINTR {}
    }

    /// The lease file in each work folder.
    static let fileName = ".lease"

    /// How long a lapse on offer waits before the lease thread takes it: a job that follows within it
    /// costs no renewal, and an agent idle from its start is quiet within its first second.
    static let lapseGrace: Int64 = 1_000_000_000

    /// The renewal thread: a renewal every quarter lease while the fence holds, one a second after
    /// it broke; none while dormant, and one at once when the loop asks for the lease again.
    private static func renew(_ shared: Shared) {
        var last = shared.record.withLock { $0.encoded() }
        var reportedFailure = false
        var nextRenewal = Fence.now() + shared.leaseNanoseconds / 4
        var lapseAt: Int64?
        while !shared.ending.load(ordering: .acquiring) {
            let fence = shared.fence
            let holds = !fence.isBroken
            let deadline: Int64?
            switch fence.phase {
            case _ where !holds: deadline = Fence.now() + 1_000_000_000
            case .dormant: deadline = nil
            case .waking: deadline = Fence.now()
            case .lapsing:
                let at = lapseAt ?? Fence.now() + lapseGrace
                lapseAt = at
                deadline = min(nextRenewal, at)
            case .active:
                lapseAt = nil
                deadline = nextRenewal
            }
            wait(shared, until: deadline)
            if shared.ending.load(ordering: .acquiring) { return }
            let phase = fence.phase
            if holds, phase == .lapsing, let at = lapseAt, Fence.now() >= at {
                lapseAt = nil
                if fence.lapse() {
                    // The last record says the lease lapses on purpose (`status` shows no fence).
                    write(shared, idle: true, last: &last, reportedFailure: &reportedFailure)
                    continue
                }
            }
            // Woken early (a lapse offered or taken back): the renewal is not due yet.
            if holds, phase == .active || phase == .lapsing, Fence.now() < nextRenewal { continue }
            if holds, phase == .dormant { continue }
            let start = Fence.now()
            guard write(shared, idle: false, last: &last, reportedFailure: &reportedFailure) else { continue }
            // A quarter lease after this write ended, as before lapses existed: a slow file system
            // is not written to back to back.
            nextRenewal = Fence.now() + shared.leaseNanoseconds / 4
            if holds, let lockPath = shared.lockPath, lockIsGone(lockPath) {
                shared.fence.breakFence("the work folder's lock (\(lockPath)) was lost: the file system's server dropped it")
                signal(shared.wakeup)
            } else if holds, phase == .waking {
                // The loop waits for this to claim: told either way (a break is seen as one).
                if !fence.resumed(startedAt: start, lease: shared.leaseNanoseconds) {
                    fence.breakFence("the lease could not be taken again")
                }
                signal(shared.wakeup)
            } else if holds {
                if !fence.renewed(startedAt: start, lease: shared.leaseNanoseconds) { signal(shared.wakeup) }
            } else if !shared.answersAgain.load(ordering: .acquiring) {
                shared.answersAgain.store(true, ordering: .releasing)
                signal(shared.wakeup)
            }
        }
    }

    /// One write of the lease (read back first, pwrite(2), fdatasync(2)); false when it failed,
    /// which breaks a fence that held.
    @discardableResult
    private static func write(_ shared: Shared, idle: Bool, last: inout [UInt8], reportedFailure: inout Bool) -> Bool {
        let holds = !shared.fence.isBroken
        let bytes = shared.record.withLock { record in
            record.renewal &+= 1
            record.idle = idle
            return record.encoded()
        }
        do throws(SystemError) {
            // Another process writing this lease is another agent of this name: not ours any
            // more. (A lease thread of an earlier, fenced agent of this process may still
            // finish a write: the same process is not another agent.)
            _ = try shared.file.seek(to: 0)
            let found = try shared.file.read(upTo: 1024, expected: last.count)
            if found != last, holds, !isThisProcess(found, shared) {
                shared.fence.breakFence("another process rewrote \(shared.file.path) (is agent_id used twice?)")
                signal(shared.wakeup)
            }
            try shared.file.write(bytes, at: 0)
            try shared.file.syncData()
            last = bytes
            if reportedFailure {
                shared.logger.info("lease renewed again", metadata: ["path": "\(shared.file.path)"])
                reportedFailure = false
            }
            return true
        } catch {
            if !reportedFailure {
                shared.logger.warning("cannot renew the lease: \(error)", metadata: ["path": "\(shared.file.path)"])
                reportedFailure = true
            }
            if holds {
                shared.fence.breakFence("the lease could not be renewed: \(error)")
                signal(shared.wakeup)
            }
            return false
        }
    }

    /// Whether this agent's flock(2) on `path` is gone: a lock taken through a descriptor of its own
    /// (another open file description, which a FUSE file system gives another lock owner, so that it
    /// conflicts with the agent's while that is held) means the server dropped the agent's lock, as
    /// GlusterFS does for a client it lost, never giving it back. The probe's lock goes with its
    /// descriptor. Not asked where locks belong to the process (NFS: fcntl locks under flock).
    private static func lockIsGone(_ path: String) -> Bool {
        guard let probe = try? FileDescriptor.open(path, flags: O_RDWR | O_NOFOLLOW | O_NONBLOCK) else { return false }
        return (try? probe.tryLockExclusive()) == true
    }

    /// Whether `folder` is on a FUSE file system (statfs(2) `f_type` FUSE_SUPER_MAGIC): GlusterFS's
    /// client, where a lock the server dropped can be seen by `lockIsGone`.
    private static func isFUSE(_ folder: String) -> Bool {
        var info = statfs()
        guard statfs(folder, &info) == 0 else { return false }
        return UInt64(truncatingIfNeeded: info.f_type) == 0x6573_5546
    }

    /// Whether `bytes` is a lease written by this process (by an earlier agent of it, or this one).
    private static func isThisProcess(_ bytes: [UInt8], _ shared: Shared) -> Bool {
        guard let found = Record.parse(bytes) else { return false }
        return shared.record.withLock { $0.pid == found.pid && $0.started == found.started && $0.boot == found.boot }
    }

    /// Waits until `deadline` (CLOCK_BOOTTIME ns; nil: no end), or until nudged (poll(2) on the
    /// nudge eventfd, which is then emptied) or ended.
    private static func wait(_ shared: Shared, until deadline: Int64?) {
        while !shared.ending.load(ordering: .acquiring) {
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - Fence.now()
                if left <= 0 { return }
                timeout = Int32(min(left / 1_000_000 + 1, 60_000))
            }
            var entry = pollfd(fd: shared.nudge.rawValue, events: Int16(POLLIN), revents: 0)
            if poll(&entry, 1, timeout) > 0 {
                var count: eventfd_t = 0
                while eventfd_read(shared.nudge.rawValue, &count) != 0, dfl_errno() == EINTR {}
                return
            }
        }
    }

    private static func signal(_ eventfd: FileDescriptor) {
        while eventfd_write(eventfd.rawValue, 1) != 0, dfl_errno() == EINTR {}
    }
}
