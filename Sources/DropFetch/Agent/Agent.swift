import CCurl
import CLinux
import Glibc
import Logging

/// The daemon: one event loop around curl_multi_poll(3), which owns every job, that claims jobs from the
/// inbox, runs their downloads under the scheduler's rules and files each job when it is over.
public final class Agent {
    public struct Options: Sendable {
        /// `run --once`: process what is there, then exit.
        public var once = false
        /// Take SIGTERM/SIGINT/SIGHUP through a signalfd (the CLI); tests running in-process do not.
        public var handleSignals = false
        /// The config file, reloaded on SIGHUP; nil when running on built-in defaults.
        public var configPath: String?
        /// Told what runs, from the loop, at most 10 times a second while transfers run (the
        /// terminal progress of `dropfetch run`); nil costs nothing.
        public var progress: ProgressObserver?

        public init(once: Bool = false, handleSignals: Bool = false, configPath: String? = nil,
                    progress: ProgressObserver? = nil) {
            self.once = once
            self.handleSignals = handleSignals
            self.configPath = configPath
            self.progress = progress
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

    /// Set when the run ended because the agent was fenced (DESIGN.md §10): its lease ran out,
    /// and it dropped its jobs. `Agent.run(config:options:logger:)` then starts a new agent.
    public private(set) var endedFenced = false
    /// This agent takes the place of one that was fenced (it says so when it starts).
    var rejoins = false

    let context: AgentContext
    let intake: JobIntake
    let runner: JobRunner
    let filer: JobFiler
    let recovery: JobRecovery
    let names: OutputNames
    let publisher: JobPublisher
    let bandwidth: BandwidthControl
    let schedule: ScheduleGate
    private var watcher: InboxWatcher?
    private var signals: SignalSource?
    private var configWatcher: ConfigWatcher?
    private var workWatcher: WorkFolderWatcher?
    private var state = State.running
    /// Calls `options.progress`; nil without an observer.
    private var progress: ProgressReporter?
    /// sd_notify(3) to systemd when `$NOTIFY_SOCKET` is set; read at the first use, in `run()`.
    lazy var notifier = ServiceNotifier.fromEnvironment(logger: logger)
    /// When `run --once` began (monotonic ms): unsettled inbox files are waited for until `once_wait`.
    private var startedAt: Int64 = 0
    /// The same on CLOCK_BOOTTIME (ms), the clock leases are counted on.
    private var startedOnBootClock: Int64 = 0
    private var lastScan: Int64 = 0
    private var lastCleanup: Int64 = 0
    /// The config file last refused by a reload (inode, size, modification time), if any.
    var rejectedConfig: [Int64]?
    /// Finished jobs' records removed under `history:`, on a thread of its own.
    private let history: HistoryPass

    var config: Config {
        _read { yield context.config }
    }
    var options: Options { context.options }
    var logger: Logger { context.logger }
    private var spool: Spool { context.spool }
    private var table: JobTable { context.table }
    private var multi: CurlMulti { context.multi }
    var clock: AgentClock { context.clock }

    /// Runs an agent until it ends, and a new one each time a daemon's was fenced (DESIGN.md §10):
    /// the new agent owns only what it claims or recovers anew. What the CLI's `run` calls.
    public static func run(config: Config, options: Options, logger: Logger) throws -> ExitStatus {
        keepFreedHeap()
        // Before any thread starts: the descriptor table grows here, not under the loop.
        let descriptors = DescriptorLimit.raise()
        if descriptors < DescriptorLimit.minimum {
            // Below this the agent's own descriptors leave no room for a transfer: it would claim
            // jobs and never finish one. Refused before anything is claimed, so nothing moves:
            // `run --once` leaves its jobs for a later run (75, as for an inbox it could not read
            // for want of descriptors); a daemon exits 2, which its unit does not restart.
            logger.error("too few file descriptors to run: raise LimitNOFILE or ulimit -n",
                         metadata: ["limit": "\(descriptors)", "needed": "\(DescriptorLimit.minimum)",
                                    "advised": "\(DescriptorLimit.comfortable)"])
            return options.once ? .retriesPending : .usage
        }
        if descriptors < DescriptorLimit.comfortable {
            logger.warning("few file descriptors: transfers will wait for each other's files to close, and claims and filings may be retried (raise LimitNOFILE or ulimit -n)",
                           metadata: ["limit": "\(descriptors)", "advised": "\(DescriptorLimit.comfortable)"])
        }
        var config = config
        var rejoins = false
        while true {
            let agent = try Agent(config: config, options: options, logger: logger)
            agent.rejoins = rejoins
            let status = agent.run()
            guard agent.endedFenced, !options.once, status == .success, agent.context.lease?.answersAgain == true else {
                return status
            }
            config = agent.context.config
            rejoins = true
        }
    }

    /// Fixes glibc's heap thresholds (mallopt(3)) so that freed heap stays for the next transfer: each
    /// transfer allocates and frees libcurl's 256 KiB receive buffer (CURLOPT_BUFFERSIZE), and with
    /// the dynamic defaults 4,000 small jobs took about 180 more page faults (bench/RESULTS.md).
    private static func keepFreedHeap() {
        dfl_keep_freed_heap(1 << 20, 4 << 20)
    }

    /// Prepares the agent; nothing touches the disk or the network until `run()`.
    public convenience init(config: Config, options: Options = Options(), logger: Logger) throws {
        try self.init(config: config, options: options, logger: logger, clock: AgentClock())
    }

    /// An agent on `clock`: the system's, or one a test drives.
    init(config: Config, options: Options = Options(), logger: Logger, clock: AgentClock) throws {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        let agentID = config.agentID ?? Agent.hostName()
        let root = Agent.absolute(config.spool)
        let crashPlan = CrashPlan.fromEnvironment()
        let spool = Spool(root: root, agentID: agentID, durable: config.fsync)
        spool.crashPlan = crashPlan
        history = HistoryPass(spoolRoot: root)
        context = AgentContext(config: config, options: options, logger: logger, spool: spool, agentID: agentID,
                               destinationRoot: Agent.absolute(config.destination ?? root + "/downloads"),
                               multi: try CurlMulti(), crashPlan: crashPlan, clock: clock)
        intake = JobIntake(context: context)
        runner = JobRunner(context: context)
        filer = JobFiler(context: context)
        recovery = JobRecovery(context: context)
        names = OutputNames(context: context)
        publisher = JobPublisher(context: context)
        bandwidth = BandwidthControl(context: context)
        schedule = ScheduleGate(context: context)
        schedule.runner = runner
        schedule.bandwidth = bandwidth
        schedule.filer = filer
        runner.schedule = schedule
        intake.runner = runner
        intake.publisher = publisher
        runner.intake = intake
        runner.filer = filer
        runner.names = names
        runner.bandwidth = bandwidth
        runner.publisher = publisher
        publisher.runner = runner
        publisher.filer = filer
        publisher.names = names
        filer.intake = intake
        recovery.intake = intake
        progress = options.progress.map(ProgressReporter.init)
    }

    /// The key that seals resume records, from the user's state folder (RecordKey.folder); where
    /// there is none, a key of this run alone: partial data is then not resumed after a restart.
    private func loadRecordKey() -> RecordKey? {
        do {
            guard let folder = RecordKey.folder() else {
                throw SystemError(code: ENOENT, operation: "find a state folder (no STATE_DIRECTORY, XDG_STATE_HOME or HOME)")
            }
            return try RecordKey.loadOrCreate(inFolder: folder)
        } catch {
            logger.warning("resume records are sealed with a key of this run only: partial data will not be resumed after a restart",
                           metadata: ["error": "\(error)"])
            return try? RecordKey.random()
        }
    }

    /// Runs until stopped (daemon) or until the work present at start is over (`once`).
    public func run() -> ExitStatus {
        do {
            // An agent that re-joins may find an adopter holding its lock for its moves: it waits a minute.
            try spool.open(patience: rejoins ? 6000 : 50)
            let lease = try WorkLease(folder: spool.work, lease: config.lease, logger: logger)
            context.lease = lease
            context.fence = lease.fence
            for worker in context.workers { worker.fence = lease.fence }
            spool.recordKey = loadRecordKey()
            context.metrics?.loadCounters()
            try FileSystem.makeDirectories(context.destinationRoot, trusting: context.destinationRoot)
            try checkDestinationsWritable()
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
            "agent": "\(context.agentID)", "spool": "\(spool.root)", "destination": "\(context.destinationRoot)",
            "mode": "\(options.once ? "once" : "daemon")", "epoch": "\(context.fence.epoch)",
        ])
        if rejoins {
            logger.info("re-joined the spool: work folder \(spool.work) taken again (lease epoch \(context.fence.epoch)); jobs adopted meanwhile are other agents' now")
        }
        let stale = spool.removeStaleTemporaries(now: clock.wallSeconds())
        if stale > 0 { logger.info("removed \(stale) temporary files older than a day") }
        startedAt = clock.now()
        startedOnBootClock = Fence.now() / 1_000_000
        lastCleanup = startedAt
        if options.once { runner.onceDeadline = Agent.adding(startedAt, config.onceWait) }
        recovery.recover()
        intake.scanInbox()
        lastScan = clock.now()
        schedule.configChanged()
        notifier?.ready()
        return loop()
    }

    private func loop() -> ExitStatus {
        let ownDescriptors = ([watcher?.fileDescriptor, signals?.fileDescriptor, configWatcher?.fileDescriptor,
                               context.lease?.descriptor] + context.workers.map(\.descriptor)).compactMap { $0 }
        func waitList(_ fds: [Int32]) -> [curl_waitfd] {
            fds.map { curl_waitfd(fd: $0, events: Int16(CURL_WAIT_POLLIN), revents: 0) }
        }
        var descriptors = waitList(ownDescriptors)
        var polledHashing: [Int32] = []
        var polledWorkFolder = false
        context.metrics?.loopStall.begin()
        var turn = 0
        while true {
            // Completed transfers whose digests a worker still computes are polled for, not joined;
            // the list is rebuilt only when that set changes.
            let hashing = runner.hashingDescriptors
            let watchesWorkFolder = watchesWorkFolderNow()
            if hashing != polledHashing || watchesWorkFolder != polledWorkFolder {
                polledHashing = hashing
                polledWorkFolder = watchesWorkFolder
                let work = watchesWorkFolder ? workWatcher.map { [$0.fileDescriptor] } ?? [] : []
                descriptors = waitList(ownDescriptors + work + hashing)
            }
            if context.fence.isBroken { return fenced() }
            schedule.refresh()
            if case .running = state {
                runner.startRunnable()
                runner.growSplits()
            }
            // The ends (publications, filings) held go to the worker as one request (JobFinish).
            sendFinishes()
            // A state the stop asked for that found no descriptor is tried again a second later
            // (`housekeeping`), at most `JobFiler.owedStateTries` times, before the agent ends.
            if case .stopping = state, table.runningCount == 0, !runner.isHashing, context.finishes.isEmpty,
               filer.nextOwedState == nil, context.workers.allSatisfy(\.isIdle) { break }
            if options.once, onceRunIsOver() { break }
            // What this turn asked of each worker (fsyncs, claims, renames) goes to it as one batch.
            for worker in context.workers { worker.flush() }
            if !options.once, let lease = context.lease, lease.fence.phase == .active, holdsNothing { lease.mayLapse() }
            do {
                context.metrics?.loopStall.end()
                try multi.poll(extra: &descriptors, timeoutMS: watchesWorkFolder ? pollTimeout() : min(pollTimeout(), workFolderWait()))
                context.metrics?.loopStall.begin()
                context.receiveBudget.beginTurn(running: table.connectionCount) { table.transfer(key: $0) }
                bandwidth.resumeThrottledTransfers()
                try multi.perform()
            } catch {
                logger.critical("libcurl multi interface failed: \(error)")
                runner.stopTransfers()
                return .failed
            }
            // What the transfers of this turn came to is not acted on once another agent may own their jobs.
            if context.fence.isBroken { return fenced() }
            // Only descriptors that curl_multi_poll(3) marked readable are read.
            func isReady(_ fd: Int32?) -> Bool { descriptors.contains { $0.fd == fd && $0.revents != 0 } }
            runner.digestsReady { isReady($0) }
            for (key, result) in multi.completed() { runner.complete(key: key, result: result) }
            runner.openSegments()
            let workers = context.workers
            for worker in workers where isReady(worker.descriptor) {
                // The ends held for the finish batch just back go with what was gathered meanwhile.
                worker.collect { if worker === context.finishSteps { sendFinishes() } }
            }
            // One budget for the ready steps of all workers, each first in turn, keeps the turn short.
            let stepsDeadline = clock.nanoseconds() + GroupCommit.readyStepsBudget
            for index in workers.indices { workers[(index + turn) % workers.count].runReadySteps(until: stepsDeadline) }
            turn &+= 1
            // The lease taken again after a lapse (a break is seen at the next turn's start); a
            // recovery that waited for it runs in `housekeeping`.
            if let lease = context.lease, isReady(lease.descriptor) { lease.drain() }
            if let signals, isReady(signals.fileDescriptor) { handle(signals.drain()) }
            if let configWatcher, isReady(configWatcher.fileDescriptor), configWatcher.drainChanged() { reloadConfig() }
            if let workWatcher, isReady(workWatcher.fileDescriptor) {
                lastWorkFolderRead = clock.now()
                for name in workWatcher.drainDeparted() { runner.jobLeftWorkFolder(name) }
            }
            if let watcher, isReady(watcher.fileDescriptor) {
                let changes = watcher.drain()
                intake.noteReleasedStates(changes.releasedStates)
                for path in changes.arrived { intake.index(path, arrival: clock.wallNanoseconds(), settled: true) }
                if changes.needsRescan { intake.scanInbox() }
            }
            housekeeping()
            let now = clock.now()
            progress?.reportIfDue(now: now, running: table.runningCount) {
                ProgressReporter.snapshot(of: table, queued: runner.scheduler.readyCount, waiting: runner.scheduler.waitingCount)
            }
            context.metrics?.writeIfDue(now: now, metricsGauges, on: context.finishSteps)
            writeStatusPageIfDue(now: now)
            notifier?.turn {
                ServiceNotifier.Counts(queued: runner.scheduler.readyCount, active: table.runningCount,
                                       waiting: runner.scheduler.waitingCount, held: SpoolStatus.heldCount(in: spool.hold))
            }
        }
        return finalStatus()
    }

    /// The lease ran out (DESIGN.md §10 Fencing): every job and transfer is dropped with no step on
    /// disk, since another agent may adopt them now. `run --once` then ends (75); a daemon waits
    /// until its file system answers again (a renewal goes through) or a stop signal comes, and
    /// ends so that a new agent re-joins (`Agent.run(config:options:logger:)`).
    private func fenced() -> ExitStatus {
        endedFenced = true
        let reason = context.fence.brokenBecause ?? "the lease ran out"
        logger.warning("fenced: \(reason); dropped \(table.count) jobs and \(table.runningCount) transfers without a step on disk: another agent may adopt them",
                       metadata: ["work": "\(spool.work)", "epoch": "\(context.fence.epoch)",
                                  "then": "\(options.once ? "exit 75" : "re-join when the file system answers")"])
        context.acceptsWork = false
        runner.abandonAll()
        context.finishes.removeAll()
        for worker in context.workers { worker.abandon() }
        spool.releaseLock()
        notifier?.status("fenced: lease on \(spool.work) ran out; waiting to re-join")
        context.metrics?.fenced()
        writeFencedMetrics(spoolAnswers: false)
        if options.once { return .retriesPending }
        var descriptors = [signals?.fileDescriptor, context.lease?.descriptor].compactMap { $0 }
            .map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while context.lease?.answersAgain == false {
            _ = poll(&descriptors, nfds_t(descriptors.count), 1000)
            notifier?.keepAlive()
            context.lease?.drain()
            guard let received = signals?.drain() else { continue }
            for signal in received {
                switch signal {
                case .terminate, .interrupt:
                    logger.info("stopped while fenced; the jobs stay for this or another agent")
                    notifier?.stopping()
                    return .success
                case .child: context.hooks.reap()
                case .hangup: break
                }
            }
        }
        // The counters reach the spool now that it answers: the new agent continues from them.
        writeFencedMetrics(spoolAnswers: true)
        return .success
    }

    /// The metrics file written at once with the `fenced` gauge set.
    private func writeFencedMetrics(spoolAnswers: Bool) {
        var gauges = metricsGauges
        gauges.fenced = true
        context.metrics?.write(now: clock.now(), gauges, spoolAnswers: spoolAnswers)
    }

    /// Sends the ends held in `finishes` to `finishSteps` when no finish batch is away. Done on
    /// the loop (`fsync: false`), an end's handler may ask for another end (a job filed after its
    /// part failed to publish): those go too, before the loop may sleep.
    private func sendFinishes() {
        while context.finishes.flush(to: context.finishSteps, limit: context.descriptorReserve / 2, durable: config.fsync,
                                     crashPlan: context.crashPlan, fence: context.fence, logger: logger) {}
    }

    /// Whether the agent holds no job and has none on its way in or out (a claim, a step, a
    /// digest), and no job file is left in its work folder (one it could not read or file): its
    /// lease may then lapse (WorkLease.mayLapse, DESIGN.md §10), since nothing is there to adopt.
    private var holdsNothing: Bool {
        guard case .running = state, table.isEmpty, intake.claimsInFlight == 0, context.finishes.isEmpty,
              !runner.isHashing, !recovery.awaitsLease, context.workers.allSatisfy(\.isIdle) else { return false }
        return spool.ownJobs().isEmpty
    }

    /// When the work folder's watch was last read (monotonic ms).
    private var lastWorkFolderRead: Int64 = 0

    /// Whether the work folder's watch is polled this turn. While a worker files jobs or writes
    /// state files there, each rename is an event that woke the loop on its own (1.8 wake-ups a
    /// small job); the watch then waits for the worker's answer, at most `quietWorkFolder` ms, so
    /// that a job held or cancelled meanwhile still stops within that.
    private func watchesWorkFolderNow() -> Bool {
        guard workWatcher != nil else { return false }
        if context.finishSteps.isIdle, context.groupCommit.isIdle { return true }
        return clock.now() - lastWorkFolderRead >= Agent.quietWorkFolder
    }

    /// How long until the work folder's watch is polled again, while it waits (ms).
    private func workFolderWait() -> Int {
        Int(max(0, lastWorkFolderRead + Agent.quietWorkFolder - clock.now()))
    }

    /// How long the work folder's watch may wait while the agent's own filings run (ms).
    static let quietWorkFolder: Int64 = 100

    /// `run --once` ends when nothing runs or is ready, no retry comes due within `once_wait`, and
    /// no inbox file is still settling within it; what waits longer stays for the next run.
    private func onceRunIsOver() -> Bool {
        // A state file owed since a descriptor shortage is written first: the next run needs it.
        guard table.runningCount == 0, !runner.isHashing, runner.scheduler.readyCount == 0, context.finishes.isEmpty,
              filer.nextOwedState == nil, context.workers.allSatisfy(\.isIdle) else { return false }
        let now = clock.now()
        let horizon = Agent.adding(now, config.onceWait)
        if let due = runner.scheduler.nextDue, due <= horizon { return false }
        if let due = table.nextFilingDue, due <= horizon { return false }
        if intake.inbox.unsettledCount > 0, now < Agent.adding(startedAt, config.onceWait) { return false }
        // A work folder to adopt once its owner's lease has run out (on another host, so not known dead).
        if let look = recovery.nextLook, look <= startedOnBootClock + Int64(config.onceWait.milliseconds) { return false }
        // Hooks are part of the run: their outcome is logged before it ends (within a bound).
        if let until = context.hooks.waitUntil, now < until { return false }
        return true
    }

    /// What the metrics file's gauges say now.
    private var metricsGauges: MetricsFile.Gauges {
        var gauges = MetricsFile.Gauges(active: table.runningCount, ready: runner.scheduler.readyCount,
                                        waiting: runner.scheduler.waitingCount, inbox: intake.inbox.count)
        gauges.addSchedule(schedule)
        return gauges
    }

    func writeMetrics() {
        context.metrics?.write(now: clock.now(), metricsGauges)
    }

    /// Exit precedence (docs/cli.md): 3 (a job could not be filed) > 1 (failed) > 75 (left waiting) > 0.
    private func finalStatus() -> ExitStatus {
        runner.writeOwedRecords()
        schedule.finish()
        if options.once, let removal = history.runNow(rule: config.history, wallSeconds: clock.wallSeconds()) { noteHistory(removal) }
        writeMetrics()
        writeFinalStatusPage()
        if case .stopping = state {
            logger.info("stopped; unfinished jobs stay in \(spool.work)")
            return .success
        }
        if table.hasFilingFailures { return .spoolUnusable }
        if filer.handledFailure { return .failed }
        // A job still indexed in the inbox waits for a claim that failed to be tried again.
        if !table.isEmpty || intake.inbox.unsettledCount > 0 || intake.inbox.count > 0 {
            schedule.explainWaiting()
            return .retriesPending
        }
        // An inbox that could not be listed, or a claimed job file left unread (EMFILE), is work left.
        if intake.scanFailure != nil || intake.unreadClaims > 0 { return .retriesPending }
        return .success
    }

    /// The poll timeout: the next retry or filing coming due, an inbox file settling, a throttled
    /// transfer's bucket refilling, the state refresh while transfers run, or the next rescan; an
    /// idle agent sleeps until one of them.
    private func pollTimeout() -> Int {
        let now = clock.now()
        var deadline = Int64.max
        if table.runningCount > 0 { deadline = runner.lastStateRefresh + 1000 }
        if let due = runner.scheduler.nextDue { deadline = min(deadline, due) }
        if let due = table.nextFilingDue { deadline = min(deadline, due) }
        if let due = filer.nextOwedState { deadline = min(deadline, due) }
        if let due = notifier?.nextDeadline { deadline = min(deadline, due) }
        if let settle = intake.inbox.nextSettleCheck {
            deadline = min(deadline, now + max(0, (settle - clock.wallNanoseconds()) / 1_000_000) + 1)
        }
        if let wake = bandwidth.nextWake(now: now) { deadline = min(deadline, wake) }
        if let change = schedule.nextWake() { deadline = min(deadline, change) }
        if let due = progress?.deadline(running: table.runningCount) { deadline = min(deadline, due) }
        if let due = context.metrics?.nextWrite(metricsGauges) { deadline = min(deadline, due) }
        if let due = statusPageDeadline { deadline = min(deadline, due) }
        if !options.once, let due = history.nextWake(rule: config.history) { deadline = min(deadline, due) }
        // SIGCHLD wakes an agent that reads signals; one that does not looks for its hooks' ends.
        if context.hooks.isRunning, signals == nil || options.once, let until = context.hooks.waitUntil {
            deadline = min(deadline, signals == nil ? now + 100 : until)
        }
        if !options.once, config.scanInterval > .zero {
            deadline = min(deadline, Agent.adding(lastScan, config.scanInterval))
        }
        // The lease running out (its renewal blocked) and a work folder whose owner's lease may have.
        if let left = context.fence.millisecondsLeft() { deadline = min(deadline, now + left + 1) }
        if let look = recovery.nextLook { deadline = min(deadline, now + max(0, look - Fence.now() / 1_000_000) + 1) }
        if context.workers.contains(where: \.hasReadySteps) || runner.startsCutShort || context.receiveBudget.hasPaused
            || context.finishes.isReadyToSend { return 0 }
        return Int(max(0, min(deadline - now, Int64(Int32.max))))
    }

    private func housekeeping() {
        context.hooks.reap()
        let now = clock.now()
        if table.runningCount > 0, now - runner.lastStateRefresh >= 1000 {
            runner.lastStateRefresh = now
            bandwidth.meterTransfers(now: now)
            filer.refreshStateFiles()
        }
        for (job, record) in table.filingDue(now: now) { publisher.file(job, record) }
        filer.writeOwedStates(now: now)
        if intake.inbox.nextSettleCheck.map({ $0 <= clock.wallNanoseconds() }) == true { intake.recheckUnsettled() }
        if !options.once, let removal = history.turn(now: now, wallSeconds: clock.wallSeconds(), rule: config.history) {
            noteHistory(removal)
        }
        if now - lastCleanup >= 3_600_000 {
            lastCleanup = now
            spool.removeStaleTemporaries(now: clock.wallSeconds())
        }
        let adoptionDue = recovery.adoptionIsDue(now: Fence.now() / 1_000_000)
        if adoptionDue || (!options.once && config.scanInterval > .zero && now >= Agent.adding(lastScan, config.scanInterval)) {
            // Recovery admits the names it finds in work/: not while a claim on its way back has
            // put one there. New claims wait for it, so it runs as soon as those are back.
            intake.holdsClaims = intake.claimsInFlight > 0
            if !intake.holdsClaims {
                lastScan = now
                recovery.recover()
                // `run --once` takes only what was in the inbox when it started.
                if !options.once { intake.scanInbox() }
            }
        }
    }

    /// Logs a retention pass that removed something, and counts it (dropfetch_history_removed_total).
    private func noteHistory(_ removal: HistoryRetention.Removal) {
        if removal.removed > 0 {
            logger.info("history: removed \(removal.removed) finished jobs", metadata: ["removed": "\(removal.removed)"])
            context.metrics?.historyRemoved(removal.removed)
        }
        if let error = removal.error { logger.warning("history: records not removed: \(error)") }
    }

    /// `start + duration` in monotonic milliseconds, saturating instead of trapping.
    static func adding(_ start: Int64, _ duration: Duration) -> Int64 {
        let (sum, overflow) = start.addingReportingOverflow(Int64(duration.milliseconds))
        return overflow ? .max : sum
    }

    private func handle(_ received: [SignalSource.Signal]) {
        for signal in received {
            switch signal {
            case .hangup:
                reloadConfig()
            case .child:
                context.hooks.reap()
            case .terminate, .interrupt:
                if case .stopping = state {
                    logger.warning("second stop signal: exiting at once")
                    exit(1)
                }
                logger.info("stop requested: aborting transfers, keeping partial data")
                notifier?.stopping()
                state = .stopping
                context.acceptsWork = false
                runner.stopTransfers()
            }
        }
    }
}
