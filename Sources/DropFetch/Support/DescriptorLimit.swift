import Glibc

/// The agent's descriptors (RLIMIT_NOFILE, getrlimit(2)): how many it may hold, and its descriptor
/// table grown once at start.
///
/// A job holds its `.part` open from its reservation until its finish batch is back, and with
/// `fsync: true` on a disk slower than the network those batches fall behind: P2 (5,000 small
/// jobs, 16 at a time) held 4,572 descriptors at once, so under the soft limit most services start
/// with (1,024, systemd's default) 2,623 of them failed `internal` with EMFILE. The agent raises the
/// soft limit to the hard one, as systemd asks of programs that need more (its low soft limit
/// protects select(2) users; libcurl and the agent poll). A host whose hard limit is that low still
/// runs out: a start held back while finishes are in flight made a job dropped meanwhile wait for a
/// batch (P3 under load: p99 250-583 ms instead of 8-18 ms), so that needs its own design.
struct DescriptorLimit: Sendable {
    /// The soft limit once raised.
    let soft: Int

    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    /// Descriptors the table is grown to at start, at most: 32 KiB of kernel memory.
    static let table = 4096

    /// The limit as it is, unchanged.
    static func current() -> DescriptorLimit {
        var limit = rlimit()
        guard getrlimit(DescriptorLimit.resource, &limit) == 0 else { return DescriptorLimit(soft: 1024) }
        return DescriptorLimit(soft: Int(clamping: limit.rlim_cur))
    }

    /// Raises the soft limit to the hard one (setrlimit(2)) and grows the descriptor table to
    /// `min(soft, table)` entries. To be called before the agent starts a thread: a table that
    /// grows while threads share it waits out an RCU grace period first (expand_fdtable →
    /// synchronize_rcu), which put 10–25 ms turns on the loop each time it doubled during P2.
    static func raise() -> DescriptorLimit {
        var limit = rlimit()
        if getrlimit(DescriptorLimit.resource, &limit) == 0, limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            _ = setrlimit(DescriptorLimit.resource, &raised)
        }
        let now = current()
        growTable(to: min(now.soft, table))
        return now
    }

    /// dup(2) of /dev/null to the last descriptor of a table of `size`, closed again: the kernel
    /// keeps the table it grew (its size rounded up to a power of two).
    private static func growTable(to size: Int) {
        guard size > 64 else { return }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard null >= 0 else { return }
        let last = fcntl(null, F_DUPFD_CLOEXEC, Int32(size - 1))
        if last >= 0 { close(last) }
        close(null)
    }
}
