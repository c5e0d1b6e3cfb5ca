import Logging

/// What every part of the agent shares: the config in force, the spool, the job table, the multi
/// handle. One per agent; only the event loop's thread touches it.
final class AgentContext {
    /// Read by every part at every step and replaced only by a reload, on the same thread: no
    /// dynamic exclusivity check (swift_beginAccess) on each read. Held by reference, so a read
    /// borrows its `let` and a worker's request takes it with one retain: a `Config` copy retains
    /// every string and array in it (three copies a small job when it was a `var` here).
    @exclusivity(unchecked) private(set) var shared: Config.Shared
    var config: Config {
        _read { yield shared.config }
    }

    /// A reload's config, in force from now on.
    func replaceConfig(_ fresh: Config) {
        shared = Config.Shared(fresh)
    }
    let options: Agent.Options
    let logger: Logger
    let spool: Spool
    let agentID: String
    let destinationRoot: String
    let multi: CurlMulti
    let hooks: HookRunner
    /// Debug builds only: where to die for the crash-matrix tests.
    let crashPlan: CrashPlan?
    var metrics: MetricsFile?
    /// The `status_page` and its `status.json`; nil when the config names none.
    var statusPage: StatusPageFile?
    /// Every job this agent owns and every transfer it runs.
    let table = JobTable()
    /// The one clock the agent's parts read (monotonic and wall): the system's, or a test's.
    let clock: AgentClock
    /// How much each loop turn may receive.
    let receiveBudget = ReceiveBudget()
    /// Where fsyncs wait to be done together, off the loop thread.
    let groupCommit: GroupCommit
    /// Where claims and reservations of output names run, off the loop thread: what a new
    /// transfer waits for, on a worker of its own so that it never queues behind the work of
    /// finishing jobs or a batch of fsyncs (with `fsync: false` too).
    let startSteps: GroupCommit
    /// Where publishing renames and filing moves run, off the loop thread.
    let finishSteps: GroupCommit
    /// The ends (publications, filings) asked for since the last finish batch, sent to `finishSteps` when it is back.
    let finishes = FinishBatch()
    /// Ends asked for and not yet handled, each holding its `.part` open: waiting for a batch
    /// away, with the worker, or back and waiting to run.
    var pendingFinishes: Int { finishes.count + finishSteps.pendingSteps }
    /// A new `.part` numbered at least this finds the agent short of descriptors (`DescriptorLimit`).
    let descriptorFloor: Int
    /// The descriptors kept free below the limit (`DescriptorLimit.reserve`).
    let descriptorReserve: Int
    /// All three, in the order the loop serves them (made once: the loop reads it several times a turn).
    let workers: [GroupCommit]
    /// False once a stop was asked for: nothing new is indexed or started.
    var acceptsWork = true
    /// This agent's lease on its work folder, taken when it starts (DESIGN.md §10 Fencing).
    var lease: WorkLease?
    /// Asked before every irreversible step for a job: the lease's, once the agent holds it.
    var fence = Fence.permanentlyOpen()

    init(config: Config, options: Agent.Options, logger: Logger, spool: Spool, agentID: String,
         destinationRoot: String, multi: CurlMulti, crashPlan: CrashPlan?, clock: AgentClock = AgentClock()) {
        shared = Config.Shared(config)
        self.options = options
        self.logger = logger
        self.spool = spool
        self.agentID = agentID
        self.destinationRoot = destinationRoot
        self.multi = multi
        self.crashPlan = crashPlan
        self.clock = clock
        hooks = HookRunner(logger: logger)
        groupCommit = GroupCommit(durable: config.fsync) { error in
            logger.warning("fsyncs run on the event loop: the sync worker cannot be used: \(error)")
        }
        // At the loop's priority: a new transfer waits for it, where the others may be left behind.
        // With `fsync: false` no claim waits on a disk: claims run on the loop, as curl writes its
        // files, without the two hand-offs a worker costs each job. Finishes go to their worker
        // whatever `fsync` says; without it, a batch of few ends runs on the loop (FinishBatch).
        startSteps = GroupCommit(durable: true, nice: 0, inline: !config.fsync) { error in
            logger.warning("claims run on the event loop: their worker cannot be used: \(error)")
        }
        finishSteps = GroupCommit(durable: true) { error in
            logger.warning("filings run on the event loop: their worker cannot be used: \(error)")
        }
        workers = [groupCommit, startSteps, finishSteps]
        let soft = DescriptorLimit.soft()
        descriptorReserve = DescriptorLimit.reserve(soft: soft, connections: config.concurrency.total * Config.Split.maxConnections)
        descriptorFloor = soft - descriptorReserve
        metrics = config.metricsFile.map {
            MetricsFile(path: Agent.absolute($0), agent: agentID, spoolRoot: spool.root, holdFolder: spool.hold, logger: logger)
        }
        statusPage = config.statusPage.map { StatusPageFile(configured: $0, agent: agentID, logger: logger) }
    }
}

/// One part of the agent (intake, runner, names, filing, recovery, bandwidth): reads the shared
/// context through these names.
protocol AgentPart: AnyObject {
    var context: AgentContext { get }
}

extension AgentPart {
    /// Borrowed, not copied: a copy of `Config` retains every string and array in it, and the
    /// parts read one field of it at a time.
    var config: Config {
        _read { yield context.config }
    }
    var logger: Logger { context.logger }
    var spool: Spool { context.spool }
    var table: JobTable { context.table }
    var multi: CurlMulti { context.multi }
    var crashPlan: CrashPlan? { context.crashPlan }
    var clock: AgentClock { context.clock }
    var agentID: String { context.agentID }
}
