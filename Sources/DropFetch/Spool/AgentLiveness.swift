import Glibc

/// Whether the agent that owns `work/<agent>/` still runs: a live agent holds flock(2) on its
/// `.lock` for good, so a shared lock that can be taken (non-blocking, on a descriptor of our own,
/// released at once) means it is gone. `status` marks such jobs rather than show stale progress.
/// Its lease (`.lease`, WorkLease) tells a fenced agent apart: one whose renewals stopped while
/// its process runs.
enum AgentLiveness {
    /// What `status` and the status page say of an agent.
    enum State: String, Sendable, Equatable {
        case running
        /// Its lease was not renewed in time while its process runs (its lock held, or a process
        /// of this host): it acts on no job until it re-joins (DESIGN.md §10 Fencing).
        case fenced
        case gone
    }

    /// False when nobody holds the work folder's lock (or it has none); true when the lock is
    /// held, or when it cannot be looked at (no permission): "gone" is said only when known.
    static func isAlive(workFolder: String) -> Bool {
        let path = workFolder + "/.lock"
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        } catch {
            return error.code != ENOENT
        }
        do {
            guard try retryingEINTR("flock", path, tolerating: EWOULDBLOCK, call: { flock(file.rawValue, LOCK_SH | LOCK_NB) })
                != nil else { return true }
        } catch {
            return true
        }
        _ = flock(file.rawValue, LOCK_UN)
        return false
    }

    /// The agent's state from its lock and its lease: a lease whose file was last written longer
    /// ago than its length and a margin (by the file's modification time: across hosts only as
    /// good as their clocks agree) is late. `now` in Unix nanoseconds.
    static func state(workFolder: String, now: Int64) -> State {
        let locked = isAlive(workFolder: workFolder)
        let path = FileSystem.join(workFolder, WorkLease.fileName)
        guard let file = try? UntrustedFile.read(atPath: path, limit: 1024),
              let lease = WorkLease.Record.parse(file.bytes) else {
            return locked ? .running : .gone
        }
        let here = !lease.boot.isEmpty && lease.boot == BootID.current && lease.pidNamespace == ProcessIdentity.pidNamespace()
        // Its lock free and its process of this host gone (killed): gone, however fresh the lease.
        if !locked, here, ProcessIdentity.isGone(pid: lease.pid, started: lease.started) { return .gone }
        let age = now - file.modified
        let allowed = (lease.leaseMilliseconds + LeaseWatch.margin(lease.leaseMilliseconds)) * 1_000_000
        // Renewed in time: running, even with its lock lost (the lease is what counts). An agent
        // that holds no job lets its lease lapse, saying so: running while it holds its lock.
        if age <= allowed || (lease.idle && locked) { return .running }
        return locked || here ? .fenced : .gone
    }
}
