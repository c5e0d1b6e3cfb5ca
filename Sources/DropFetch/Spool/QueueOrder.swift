
/// The queue of a whole spool in the order it will run (docs/status-page.md): claimed jobs that
/// wait for a slot and the job files of the inbox, ordered as the agents' schedulers order them —
/// higher priority first, then arrival (`order: fifo` or `lifo`), claimed before unclaimed.
///
/// The inbox is read from disk, not from an agent's memory, so `status --html` without a daemon
/// shows the same order: a job file's priority and class come from parsing it (a job file that
/// cannot be read or parsed queues at priority 0, as the agent indexes it), its arrival is its
/// mtime, or the submission time a released job brought back.
public struct QueueOrder: Sendable {
    /// One job in the queue.
    public struct Entry: Sendable, Equatable {
        /// The job file's name (`x.url`), or the name as dropped for a claimed job.
        public var job: String
        /// The inbox subfolder (routing key); empty at the top level.
        public var folder: String
        public var className: String
        public var priority: Int
        /// Nanoseconds since the epoch.
        public var arrival: Int64
        /// The agent that claimed it; nil while it is in the inbox.
        public var claimedBy: String?
    }

    /// The first `limit` entries, in order.
    public var entries: [Entry]
    /// How many jobs are queued in all (inbox and claimed).
    public var total: Int

    /// What a job file said the last time it was read, by inbox path: a page rewritten every second
    /// reads only the job files that are new or changed since. The status page's worker fills it
    /// while the loop holds it for the next page, so it is behind a lock.
    public final class JobFileCache: Sendable {
        fileprivate let known = Locked<[String: (modified: Int64, priority: Int, className: String)]>([:])
        public init() {}
    }

    /// The queue of the spool `status` was read from; `cache`, when given, may be shared between
    /// threads, though two readings at the same time would each read the job files the other did.
    /// `now`: wall seconds, against which a released job's hints are checked.
    public static func read(config: Config, status: SpoolStatus, limit: Int = 100, cache: JobFileCache = JobFileCache(),
                            now: Int64) -> QueueOrder {
        let root = Agent.absolute(config.spool)
        let spool = Spool(root: root, agentID: config.agentID ?? Agent.hostName(), durable: false)
        var entries: [(entry: Entry, claimed: Bool)] = []
        for record in status.waiting where record.state == .queued && !status.isOrphaned(record) {
            let arrival = Timestamp.parse(record.submitted).map { $0 * 1_000_000_000 } ?? 0
            entries.append((Entry(job: record.job, folder: record.folder ?? "", className: record.className,
                                  priority: record.priority, arrival: arrival, claimedBy: record.agent), true))
        }
        var seen: Set<String> = []
        for found in spool.scanInbox() {
            seen.insert(found.relativePath)
            let (priority, className) = describe(found, in: spool, config: config, cache: cache)
            var arrival = found.modified
            if let submitted = spool.releasedState(of: found.relativePath, now: now)?.submitted { arrival = submitted * 1_000_000_000 }
            entries.append((Entry(job: found.name, folder: found.folder, className: className, priority: priority,
                                  arrival: arrival, claimedBy: nil), false))
        }
        cache.known.withLock { known in known = known.filter { seen.contains($0.key) } }
        let fifo = config.order == .fifo
        let sorted = entries.sorted { a, b in
            if a.entry.priority != b.entry.priority { return a.entry.priority > b.entry.priority }
            if a.entry.arrival != b.entry.arrival { return fifo ? a.entry.arrival < b.entry.arrival : a.entry.arrival > b.entry.arrival }
            if a.claimed != b.claimed { return a.claimed }
            return (a.entry.folder, a.entry.job) < (b.entry.folder, b.entry.job)
        }
        return QueueOrder(entries: sorted.prefix(max(0, limit)).map(\.entry), total: sorted.count)
    }

    /// A job file's priority and class, as `JobIntake.index` reads them.
    private static func describe(_ found: Spool.InboxEntry, in spool: Spool, config: Config,
                                 cache: JobFileCache) -> (Int, String) {
        if let known = cache.known.withLock({ $0[found.relativePath] }), known.modified == found.modified, found.modified != 0 {
            return (known.priority, known.className)
        }
        var priority = 0
        var className = "default"
        if case .success(let bytes) = JobFileReader.read(FileSystem.join(spool.inbox, found.relativePath), limit: config.limits.maxJobFileSize),
           let spec = try? JobFileParser.parse(bytes) {
            let matched = (try? config.resolveClass(spec: spec, folder: found.folder).get()) ?? nil
            className = matched?.name ?? "default"
            priority = spec.priority ?? matched?.priority ?? 0
        }
        cache.known.withLock { $0[found.relativePath] = (found.modified, priority, className) }
        return (priority, className)
    }
}
