import CCurl
import Glibc
import Logging

/// The daemon: one thread, one event loop around curl_multi_poll(3) that claims jobs from the
/// inbox, runs their downloads under the scheduler's rules and files each job when it is over.
public final class Agent {
    public struct Options: Sendable {
        /// `run --once`: process what is there, then exit.
        public var once = false
        /// Take SIGTERM/SIGINT/SIGHUP through a signalfd (the CLI); tests running in-process do not.
        public var handleSignals = false
        /// The config file, reloaded on SIGHUP; nil when running on built-in defaults.
        public var configPath: String?

        public init(once: Bool = false, handleSignals: Bool = false, configPath: String? = nil) {
            self.once = once
            self.handleSignals = handleSignals
            self.configPath = configPath
        }
    }

    /// The process exit codes of docs/cli.md.
    public enum ExitStatus: Int32, Sendable {
        case success = 0
        case failed = 1
        case usage = 2
        case spoolUnusable = 3
        case retriesPending = 75
    }

    private enum State {
        case running
        /// A stop was asked for: no new starts, abort transfers, keep their data.
        case stopping
    }

    var config: Config
    let options: Options
    let logger: Logger
    let spool: Spool
    let agentID: String
    let destinationRoot: String
    let multi: CurlMulti
    var scheduler: Scheduler
    private var watcher: InboxWatcher?
    private var signals: SignalSource?
    private var configWatcher: ConfigWatcher?
    private var workWatcher: WorkFolderWatcher?
    private var state = State.running
    /// Debug builds only: where to die for the crash-matrix tests.
    let crashPlan = CrashPlan.fromEnvironment()
    let hooks: HookRunner
    var metrics: MetricsFile?
    /// sd_notify(3) to systemd when `$NOTIFY_SOCKET` is set; read at the first use, in `run()`.
    lazy var notifier = ServiceNotifier.fromEnvironment(logger: logger)

    var jobs: [Int: Job] = [:]
    var jobIDs: [String: Int] = [:]
    /// Running transfers by easy-handle key.
    var transfers: [Int: (transfer: Transfer, entry: Scheduler.Entry)] = [:]
    var admission: Admission
    var partsInUse: Set<String> = []
    /// `.part` files found locked by another agent in this scheduling pass (`startRunnable`).
    var busyParts: Set<String> = []
    /// Destination folders already created, so each job does not walk the path with mkdir(2) again.
    var knownFolders: Set<String> = []
    /// Whether some transfer got a speed cap, so that removing every limit resets them.
    var rateLimitsApplied = false
    var nextJobID = 0
    var nextArrival = 0
    var handledFailure = false
    private var lastStateRefresh: Int64 = 0
    private var lastScan: Int64 = 0
    private var lastCleanup = MonotonicClock.now()

    /// Prepares the agent; nothing touches the disk or the network until `run()`.
    public init(config: Config, options: Options = Options(), logger: Logger) throws {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        self.config = config
        self.options = options
        self.logger = logger
        agentID = config.agentID ?? Agent.hostName()
        let root = Agent.absolute(config.spool)
        spool = Spool(root: root, agentID: agentID, durable: config.fsync)
        spool.crashPlan = crashPlan
        hooks = HookRunner(logger: logger)
        let id = agentID
        metrics = config.metricsFile.map { MetricsFile(path: Agent.absolute($0), agent: id) }
        destinationRoot = Agent.absolute(config.destination ?? root + "/downloads")
        multi = try CurlMulti()
        scheduler = Scheduler(order: config.order)
        admission = Admission(limits: Admission.Limits(config))
    }

    /// Runs until stopped (daemon) or until the work present at start is over (`once`).
    public func run() -> ExitStatus {
        do {
            try spool.open()
            try FileSystem.makeDirectories(destinationRoot)
            if !options.once { watcher = try InboxWatcher(inbox: spool.inbox) }
            workWatcher = try WorkFolderWatcher(folder: spool.work)
            if options.handleSignals { signals = try SignalSource() }
            if !options.once, let path = options.configPath {
                do {
                    configWatcher = try ConfigWatcher(configPath: Agent.absolute(path))
                } catch {
                    logger.warning("config changes will need SIGHUP: \(error)")
                }
            }
        } catch {
            logger.critical("\(error)")
            return .spoolUnusable
        }
        logger.info("agent started", metadata: [
            "agent": "\(agentID)", "spool": "\(spool.root)", "destination": "\(destinationRoot)",
            "mode": "\(options.once ? "once" : "daemon")",
        ])
        let stale = spool.removeStaleTemporaries()
        if stale > 0 { logger.info("removed \(stale) temporary files older than a day") }
        recover()
        claimInbox()
        lastScan = MonotonicClock.now()
        notifier?.ready()
        return loop()
    }

    private func loop() -> ExitStatus {
        let ownDescriptors = [watcher?.fileDescriptor, signals?.fileDescriptor, workWatcher?.fileDescriptor,
                              configWatcher?.fileDescriptor].compactMap { $0 }
        var descriptors = ownDescriptors.map { curl_waitfd(fd: $0, events: Int16(CURL_WAIT_POLLIN), revents: 0) }
        while true {
            if case .running = state { startRunnable() }
            if case .stopping = state, transfers.isEmpty { break }
            if options.once, onceRunIsOver() { break }
            do {
                try multi.poll(extra: &descriptors, timeoutMS: pollTimeout())
                try multi.perform()
            } catch {
                logger.critical("libcurl multi interface failed: \(error)")
                stopTransfers()
                return .failed
            }
            for (key, result) in multi.completed() { complete(key: key, result: result) }
            // Only descriptors that curl_multi_poll(3) marked readable are read.
            func isReady(_ fd: Int32?) -> Bool { descriptors.contains { $0.fd == fd && $0.revents != 0 } }
            if let signals, isReady(signals.fileDescriptor) { handle(signals.drain()) }
            if let configWatcher, isReady(configWatcher.fileDescriptor), configWatcher.drainChanged() { reloadConfig() }
            if let workWatcher, isReady(workWatcher.fileDescriptor) {
                for name in workWatcher.drainDeparted() { jobLeftWorkFolder(name) }
            }
            if let watcher, isReady(watcher.fileDescriptor) {
                let changes = watcher.drain()
                for path in changes.arrived { claim(Spool.InboxEntry(relativePath: path, modified: 0)) }
                if changes.needsRescan { claimInbox() }
            }
            housekeeping()
            notifier?.turn {
                ServiceNotifier.Counts(queued: scheduler.readyCount, active: transfers.count,
                                       waiting: scheduler.waitingCount, held: SpoolStatus.heldCount(in: spool.hold))
            }
        }
        return finalStatus()
    }

    /// `run --once` ends when nothing runs or is ready and no retry comes due within `once_wait`;
    /// later retries stay in work/ with their due time for the next run.
    private func onceRunIsOver() -> Bool {
        guard transfers.isEmpty, scheduler.readyCount == 0 else { return false }
        guard let due = scheduler.nextDue else { return true }
        return due > MonotonicClock.now() + Int64(config.onceWait.milliseconds)
    }

    func writeMetrics() {
        do {
            try metrics?.write(active: transfers.count, ready: scheduler.readyCount, waiting: scheduler.waitingCount)
        } catch {
            logger.warning("cannot write metrics_file: \(error)")
        }
    }

    private func finalStatus() -> ExitStatus {
        writeMetrics()
        if case .stopping = state {
            logger.info("stopped; unfinished jobs stay in \(spool.work)")
            return .success
        }
        if handledFailure { return .failed }
        if !jobs.isEmpty { return .retriesPending }
        return .success
    }

    /// The poll timeout: the next retry coming due, the state refresh, or the next rescan.
    private func pollTimeout() -> Int {
        let now = MonotonicClock.now()
        var deadline = now + 1000
        if let due = scheduler.nextDue { deadline = min(deadline, due) }
        if let due = notifier?.nextDeadline { deadline = min(deadline, due) }
        if !options.once, config.scanInterval > .zero {
            deadline = min(deadline, lastScan + Int64(config.scanInterval.milliseconds))
        }
        return Int(max(0, min(deadline - now, 1000)))
    }

    private func housekeeping() {
        hooks.reap()
        let now = MonotonicClock.now()
        if now - lastStateRefresh >= 1000 {
            lastStateRefresh = now
            refreshStateFiles()
            writeMetrics()
        }
        if now - lastCleanup >= 3_600_000 {
            lastCleanup = now
            spool.removeStaleTemporaries()
        }
        if !options.once, config.scanInterval > .zero, now - lastScan >= Int64(config.scanInterval.milliseconds) {
            lastScan = now
            claimInbox(settled: true)
        }
    }

    private func handle(_ received: [SignalSource.Signal]) {
        for signal in received {
            switch signal {
            case .hangup:
                reloadConfig()
            case .terminate, .interrupt:
                if case .stopping = state {
                    logger.warning("second stop signal: exiting at once")
                    exit(1)
                }
                logger.info("stop requested: aborting transfers, keeping partial data")
                notifier?.stopping()
                state = .stopping
                stopTransfers()
            }
        }
    }

    /// Applies a new config to what has not started yet; a bad file keeps the running config.
    /// Spool, destination and agent id need a restart; running transfers keep going.
    func reloadConfig() {
        guard let path = options.configPath else { return }
        notifier?.reloading()
        defer { notifier?.ready() }
        do {
            var fresh = try ConfigLoader.load(path: path)
            for (name, changed) in [("spool", fresh.spool != config.spool),
                                    ("destination", fresh.destination != config.destination),
                                    ("agent_id", fresh.agentID != config.agentID)] where changed {
                logger.warning("config reload: \(name) changes only on restart")
            }
            fresh.spool = config.spool
            fresh.agentID = config.agentID
            fresh.destination = config.destination
            guard fresh != config else { return }
            config = fresh
            requeueUnstarted()
            applyRateLimits()
            logger.info("config reloaded from \(path)", metadata: [
                "total": "\(fresh.concurrency.total)", "per_host": "\(fresh.concurrency.perHost)",
                "classes": "\(fresh.classes.count)",
            ])
        } catch {
            logger.error("config not reloaded, keeping the running one: \(error)")
        }
    }

    // MARK: - Inbox

    /// Claims every job in the inbox, oldest first. A periodic rescan (`settled`) leaves files
    /// modified in the last two seconds to their inotify event: a writer may still be at work.
    private func claimInbox(settled: Bool = false) {
        var entries = spool.scanInbox().sorted {
            ($0.modified, $0.relativePath) < ($1.modified, $1.relativePath)
        }
        if settled {
            let cutoff = (Int64(time(nil)) - 2) * 1_000_000_000
            entries.removeAll { $0.modified > cutoff }
        }
        for entry in entries { claim(entry) }
    }

    private func claim(_ entry: Spool.InboxEntry) {
        guard case .running = state else { return }
        let workName: String?
        do {
            workName = try spool.claim(entry)
        } catch {
            logger.error("cannot claim \(entry.relativePath): \(error)")
            return
        }
        guard let workName else { return }
        crashPlan?.reach(.claimed)
        logger.debug("claimed \(entry.relativePath)")
        admit(workName: workName, jobName: entry.name, folder: entry.folder, previous: nil)
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "agent" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let safe = name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" }
        return safe.isEmpty ? "agent" : String(safe)
    }

    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        var base = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var rest = Substring(path)
        while rest.hasPrefix("./") { rest = rest.dropFirst(2) }
        if rest == "." { rest = "" }
        if !rest.isEmpty { base += (base.hasSuffix("/") ? "" : "/") + rest }
        return base
    }
}
