/// What this agent saw of other agents' leases (`work/<agent>/.lease`, WorkLease), so that it
/// adopts a work folder only when its owner can no longer act on it (DESIGN.md §10 Fencing): the
/// folder's flock(2) is free and the lease's bytes stayed the same for the owner's lease and a
/// margin, counted on this agent's own clock from when it first saw them (the owner's clock and
/// the file's times prove nothing here). An owner on this host whose process is gone is adopted
/// at once, and its partial data trusted: nothing of it can still be written.
final class LeaseWatch {
    enum Verdict: Equatable {
        /// Adopt now; `trustsData` when the owner is provably gone (its `.part` bytes are final).
        case adopt(trustsData: Bool)
        /// Not before this time (CLOCK_BOOTTIME milliseconds).
        case wait(until: Int64)
    }

    /// Per agent: the lease's bytes as last read, and when they were first seen so.
    private var seen: [String: (bytes: [UInt8], since: Int64)] = [:]
    /// This agent's own lease: an owner's shorter one is not trusted to be shorter.
    private let ownLease: Int64

    init(ownLease: Duration) {
        self.ownLease = Int64(ownLease.milliseconds)
    }

    /// The verdict on `agent`'s work folder at `folder`, whose flock(2) this agent just took;
    /// `now` in CLOCK_BOOTTIME milliseconds.
    func verdict(on agent: String, folder: String, now: Int64) -> Verdict {
        let bytes = (try? UntrustedFile.read(atPath: FileSystem.join(folder, WorkLease.fileName), limit: 1024))?.bytes ?? []
        let record = WorkLease.Record.parse(bytes)
        if let record, record.boot == BootID.current, !record.boot.isEmpty,
           record.pidNamespace == ProcessIdentity.pidNamespace(), ProcessIdentity.isGone(pid: record.pid, started: record.started) {
            seen[agent] = nil
            return .adopt(trustsData: true)
        }
        let lease = max(ownLease, min(record?.leaseMilliseconds ?? 0, 3_600_000))
        let due: Int64
        if let previous = seen[agent], previous.bytes == bytes {
            due = previous.since + lease + LeaseWatch.margin(lease)
        } else {
            seen[agent] = (bytes, now)
            due = now + lease + LeaseWatch.margin(lease)
        }
        guard now >= due else { return .wait(until: due) }
        seen[agent] = nil
        return .adopt(trustsData: false)
    }

    /// `agent`'s lock is held: it is alive, and its lease is looked at afresh when it is not.
    func sawAlive(_ agent: String) {
        seen[agent] = nil
    }

    /// What a lease is given beyond its length: a stale read through a network file system's
    /// cache (GlusterFS shows a replaced file's old bytes for up to a second) and clock-rate drift.
    static func margin(_ lease: Int64) -> Int64 {
        max(2_000, lease / 4)
    }
}
