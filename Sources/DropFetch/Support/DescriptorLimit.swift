import CLinux
import Glibc

/// The agent's soft RLIMIT_NOFILE raised to the hard one and its descriptor table grown, once at
/// start (setrlimit(2), docs/architecture.md).
///
/// A job holds its `.part` open until its finish batch is back, and with `fsync: true` on a disk
/// slower than the network those batches fall behind: P2 (5,000 small jobs) held 4,572 descriptors
/// at once, and under the soft limit systemd starts services with (1,024) about half its jobs failed
/// with EMFILE. systemd asks programs that need more to raise it themselves (the low soft limit
/// protects select(2) users; libcurl and the agent poll). Where the hard limit is that low too, the
/// agent takes no new `.part` while its descriptors near the limit (`JobRunner`'s shortage hold):
/// downloads wait for the finishes in flight to close theirs, and none fails for EMFILE.
enum DescriptorLimit {
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    /// Descriptors the table is grown to at start, at most: 32 KiB of kernel memory.
    static let table = 4096

    /// Raises the soft limit to the hard one and grows the descriptor table to as many entries, at
    /// most `table`; returns the soft limit then in force. Before the agent starts a thread: a
    /// table that grows while threads share it waits out an RCU grace period first
    /// (expand_fdtable → synchronize_rcu), which put 10–25 ms turns on the loop each time it
    /// doubled during P2.
    @discardableResult
    static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return soft() }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        growTable(to: Int(clamping: min(limit.rlim_cur, rlim_t(table))))
        return Int(clamping: limit.rlim_cur)
    }

    /// The fewest descriptors with which no claim or filing waits for one: 1,000 small jobs with
    /// `fsync: true`, 16 at a time, ran without an EMFILE at 256, and with filings retried at 128.
    static let comfortable = 256

    /// The fewest descriptors the agent runs with (below it `run --once` exits 75, a daemon 2): an
    /// idle daemon holds about 22 (inotify, eventfds, signalfd, its lock, lease and folders). At 24,
    /// 300 small jobs 16 at a time were claimed and none finished in 60 s; at 32 all were done.
    static let minimum = 32

    /// How long a download, claim or filing that found no descriptor waits before it is tried
    /// again (ms): long enough for a finish batch to come back and close its parts.
    static let retryDelay: Int64 = 1000

    /// The soft limit as it is (getrlimit(2)), at most `Int.max`.
    static func soft() -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)
    }

    /// The descriptors kept free for sockets, status files, job files and hooks: descriptors are
    /// handed out lowest first (open(2)), so a new `.part` numbered `soft - reserve` or more shows
    /// the agent short of them. A quarter of the limit at most.
    static func reserve(soft: Int, connections: Int) -> Int {
        min(soft / 4, 128 + 2 * connections)
    }

    /// Errors that say the agent, not the file, is out of descriptors (open(2): EMFILE, ENFILE).
    static func isShortage(_ error: SystemError) -> Bool { isShortage(code: error.code) }

    static func isShortage(code: Int32) -> Bool { code == EMFILE || code == ENFILE }

    /// Whether the agent has no descriptor left: open(2) of "/" fails with EMFILE or ENFILE.
    /// libcurl reports a socket(2) that failed so only as CURLE_COULDNT_CONNECT, with no
    /// CURLINFO_OS_ERRNO (7.88), so a failed connection asks this.
    static func isExhausted() -> Bool {
        let probe = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if probe >= 0 {
            close(probe)
            return false
        }
        return isShortage(code: dfl_errno())
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
