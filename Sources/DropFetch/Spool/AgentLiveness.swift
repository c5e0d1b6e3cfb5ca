import Glibc

/// Whether the agent that owns `work/<agent>/` still runs: a live agent holds flock(2) on its
/// `.lock` for good, so a shared lock that can be taken (non-blocking, on a descriptor of our own,
/// released at once) means it is gone. `status` marks such jobs rather than show stale progress.
enum AgentLiveness {
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
}
