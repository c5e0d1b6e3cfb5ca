import Logging

/// The `status_page` (docs/status-page.md): the HTML page of the whole spool and `status.json`
/// beside it, each replaced atomically (temp + rename(2)) on a worker, so the loop never waits for
/// the spool to be read or the files to be written.
///
/// Written when what the loop holds changed (the gauges) — a job queued, started, filed, waiting
/// or gone, or the state files refreshed, which happens once a second while bytes flow — at most
/// once a second; an idle agent writes nothing and sets no timer for it. It also keeps the bytes
/// received per minute over the last hour (ThroughputRing) for the page's sparkline.
final class StatusPageFile {
    /// The name of the JSON file written beside the page: what `status --json` prints.
    static let jsonName = "status.json"
    /// The shortest time between two writes, in ms.
    static let interval: Int64 = 1000
    /// The shortest time between two warnings about a failing write, in ms.
    static let warningInterval: Int64 = 3_600_000

    /// What the loop holds now, read each turn without a system call; any difference from the
    /// last page's is a change worth a new page.
    struct Gauges: Equatable {
        var running = 0
        var ready = 0
        var waiting = 0
        var inbox = 0
        var jobs = 0
        /// The scheduler's heap operations so far: a job entering or leaving the queue moves it.
        var queueOperations = 0
        /// When the state files were last refreshed (monotonic ms): once a second while bytes flow.
        var stateRefresh: Int64 = 0
    }

    /// As the config says it (relative to the working folder at start).
    let configured: String
    let path: String
    let agent: String
    private let logger: Logger
    private(set) var ring = ThroughputRing()
    private var writtenGauges: Gauges?
    private var lastWrite = Int64.min
    /// A write is on the worker: the next waits for it (and its completion wakes the loop).
    private var writing = false
    private let cache = QueueOrder.JobFileCache()
    /// When the last warning about a failing write was logged (monotonic ms); nil while writes work.
    private var warnedAt: Int64?
    /// The page's folder, opened at the first write and kept: both files are written through it,
    /// so a symlink later swapped in for the folder is never followed (nil until it could be opened).
    private var folder: DirectoryHandle?

    init(configured: String, agent: String, logger: Logger) {
        self.configured = configured
        path = Agent.absolute(configured)
        self.agent = agent
        self.logger = logger
    }

    /// When the page should next be written (monotonic ms): nil while nothing changed or a write
    /// is under way.
    func nextWrite(_ gauges: Gauges) -> Int64? {
        guard !writing, gauges != writtenGauges else { return nil }
        return lastWrite == .min ? 0 : lastWrite + StatusPageFile.interval
    }

    /// Counts the bytes received so far (`received`, since the agent started) into the ring, then
    /// writes the page on `worker` when something changed and the last write is a second old.
    /// `wallSeconds` is the agent clock's wall time, the page's `written_at`.
    func writeIfDue(now: Int64, wallSeconds: Int64, _ gauges: Gauges, received: Int64, config: Config, on worker: GroupCommit) {
        ring.record(total: received, now: now)
        guard let due = nextWrite(gauges), now >= due else { return }
        write(now: now, wallSeconds: wallSeconds, gauges, config: config, on: worker)
    }

    /// Writes the page and `status.json` whatever changed: on `worker` when given, here otherwise
    /// (at the end of a run, when the agent shows itself as stopped).
    func write(now: Int64, wallSeconds: Int64, _ gauges: Gauges, config: Config, stopping: Bool = false, on worker: GroupCommit?) {
        lastWrite = now
        writtenGauges = gauges
        let folder: DirectoryHandle
        do {
            folder = try openFolder()
        } catch {
            return report(error, now: now)
        }
        let task = StatusPageWrite(config: config, folder: folder, pageName: FileSystem.baseName(of: path), agent: agent,
                                   perMinute: ring.perMinute(at: now), stopping: stopping,
                                   cache: writing ? QueueOrder.JobFileCache() : cache, writtenAt: wallSeconds)
        guard let worker else {
            _ = task.perform()
            return report(task.error, now: now)
        }
        writing = true
        worker.sync([.task(task)]) { [self] _ in
            writing = false
            report(task.error, now: now)
        }
    }

    /// The page's folder: its parent opened by path, the folder itself with O_NOFOLLOW, so that a
    /// symlink in its place is refused (ELOOP) as for the destination's subfolders.
    private func openFolder() throws(SystemError) -> DirectoryHandle {
        if let folder { return folder }
        let directory = FileSystem.directoryName(of: path)
        let parent = FileSystem.directoryName(of: directory)
        let name = FileSystem.baseName(of: directory)
        let opened = parent != directory && DirectoryHandle.isPlainComponent(name)
            ? try DirectoryHandle.openRoot(parent, create: false).subfolder(name, create: false)
            : try DirectoryHandle.openRoot(directory, create: false)
        folder = opened
        return opened
    }

    /// Warns about a failing write once an hour at most, and says once when it works again.
    private func report(_ error: SystemError?, now: Int64) {
        guard let error else {
            if warnedAt != nil {
                warnedAt = nil
                logger.info("status_page written again", metadata: ["file": "\(path)"])
            }
            return
        }
        if let last = warnedAt, now - last < StatusPageFile.warningInterval { return }
        warnedAt = now
        logger.warning("cannot write status_page; next warning in an hour at the earliest",
                       metadata: ["file": "\(path)", "error": "\(error)"])
    }
}
