import Glibc

/// The agent's soft RLIMIT_NOFILE raised to the hard one and its descriptor table grown, once at
/// start (setrlimit(2), docs/architecture.md).
///
/// A job holds its `.part` open until its finish batch is back, and with `fsync: true` on a disk
/// slower than the network those batches fall behind: P2 (5,000 small jobs) held 4,572 descriptors
/// at once, and under the soft limit systemd starts services with (1,024) about half its jobs failed
/// with EMFILE. systemd asks programs that need more to raise it themselves (the low soft limit
/// protects select(2) users; libcurl and the agent poll). A host whose hard limit is that low still
/// runs out: that needs its own design.
enum DescriptorLimit {
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    /// Descriptors the table is grown to at start, at most: 32 KiB of kernel memory.
    static let table = 4096

    /// Raises the soft limit to the hard one and grows the descriptor table to as many entries, at
    /// most `table`. Before the agent starts a thread: a table that grows while threads share it
    /// waits out an RCU grace period first (expand_fdtable → synchronize_rcu), which put 10–25 ms
    /// turns on the loop each time it doubled during P2.
    static func raise() {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        growTable(to: Int(clamping: min(limit.rlim_cur, rlim_t(table))))
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
