import Logging
import Glibc

/// Puts `schedule:` and `quota:` in force (docs/config.md "Schedules and quotas"): at each wake it
/// computes, from the wall clock and the spool's quota ledger, the windows in force and each
/// quota's use (`ScheduleState`, `QuotaUsage`), never from what it remembered, so that a restart,
/// a reload, a clock jump or a suspend lands in the state the clock says. It gives the limits in
/// force to `Admission` and `BandwidthControl`, holds back what may not start (a `waiting`
/// download with reason `schedule` or `quota` until the change), pauses running transfers a
/// `pause: true` window or a `running: pause` quota stops, and counts this agent's bytes.
final class ScheduleGate: AgentPart {
    let context: AgentContext
    unowned var runner: JobRunner!
    unowned var bandwidth: BandwidthControl!
    unowned var filer: JobFiler!

    private(set) var state = ScheduleState()
    private(set) var quotas: [QuotaUsage] = []
    private var ledger: QuotaLedger?
    private var calendar = LocalCalendar()
    /// Wall-clock ms minus monotonic ms when the state was computed: a change means the clock jumped.
    private var skew: Int64 = 0
    /// Monotonic ms of the last ledger exchange.
    private var lastRead: Int64 = .min
    /// The other agents' counts, as the last exchange read them.
    private var others: [QuotaUsage.Key: Int64] = [:]
    /// A `QuotaLedgerSync` is on its way.
    private var syncInFlight = false
    /// `bandwidth.bytesByClass` already counted in the ledger.
    private var counted: [String: Int64] = [:]
    /// Inbox jobs held back (not claimed while they may not start).
    private var heldInbox: Set<Scheduler.Unit> = []
    /// What holds back new transfers: a pause, and the quotas used up.
    private var holding = Holding()

    private struct Holding: Equatable {
        var pause: Config.ScheduleWindow.Pause?
        var quotas: [Config.Quota] = []
    }

    init(context: AgentContext) {
        self.context = context
    }

    private var isConfigured: Bool { !config.schedule.isEmpty || !config.quotas.isEmpty }

    /// At the start and after a reload: the ledger taken up, the state computed and put in force.
    func configChanged() {
        if !config.quotas.isEmpty, ledger == nil {
            let made = QuotaLedger(spoolRoot: spool.root, agent: agentID)
            made.load()
            ledger = made
        }
        refresh(force: true)
    }

    /// Before each loop turn starts transfers: recomputes what changed since the last wake.
    func refresh(force: Bool = false) {
        guard isConfigured || force else { return }
        let wall = clock.wallSeconds()
        let now = clock.now()
        let jumped = abs(wall * 1000 - now - skew) > 2000
        var limitsChanged = false
        if force || jumped || state.nextChange.map({ wall >= $0 }) == true {
            skew = wall * 1000 - now
            let fresh = ScheduleState(at: wall, schedule: config.schedule, calendar: calendar)
            if fresh.windows != state.windows || force {
                logWindows(fresh, changed: fresh.windows != state.windows)
            }
            limitsChanged = fresh != state || force
            state = fresh
            runner.admission.limits = fresh.admissionLimits(config)
            bandwidth.limitsInForce = fresh.bandwidthLimits(config)
        }
        if !config.quotas.isEmpty { refreshQuotas(wall: wall, now: now, force: force || jumped) } else { quotas = [] }
        let held = Holding(pause: state.pause, quotas: quotas.filter(\.isReached).map(\.quota))
        bandwidth.suspends = suspension()
        if held != holding || jumped || force {
            holding = held
            releaseHeld()
            limitsChanged = true
        }
        if limitsChanged { bandwidth.applyRateLimits() }
    }

    /// Counts new bytes, writes this agent's ledger file and reads everyone's, at most once a
    /// second (and at once when a period ends). The exchange runs on a worker (`QuotaLedgerSync`);
    /// this agent's own counts are in memory, so only the other agents' lag by its round trip. At
    /// the start, after a reload and at the end (`force`) it runs here, so that what starts next
    /// obeys every agent's counts.
    private func refreshQuotas(wall: Int64, now: Int64, force: Bool) {
        guard let ledger else { return }
        let today = calendar.localTime(wall).date
        for (className, bytes) in bandwidth.bytesByClass {
            ledger.add(bytes - counted[className, default: 0], className: className, on: today)
            counted[className] = bytes
        }
        let periodOver = quotas.contains { wall >= $0.reset }
        guard force || periodOver || now - lastRead >= 1000 || (ledger.isWriteDue(now: now) && table.runningCount == 0) else { return }
        ledger.prune(on: today)
        lastRead = now
        let bound = QuotaBound(config: config, calendar: calendar)
        if force {
            if ledger.isDirty {
                do {
                    try ledger.write()
                    noteWrite(nil, ledger: ledger, now: now)
                } catch {
                    noteWrite(error, ledger: ledger, now: now)
                }
            }
            others = QuotaLedger.others(in: ledger.folder, except: ledger.agent, bound: bound, now: wall)
        } else if !syncInFlight {
            syncInFlight = true
            let sync = QuotaLedgerSync(folder: ledger.folder, agent: ledger.agent, text: ledger.takeText(now: now), bound: bound,
                                       wall: wall)
            context.finishSteps.sync([.task(sync)]) { [self] _ in
                syncInFlight = false
                if sync.request.text != nil { noteWrite(sync.writeError, ledger: ledger, now: clock.now()) }
                others = sync.others
                noteUsages(wall: clock.wallSeconds())
                refresh()
            }
        }
        noteUsages(wall: wall)
    }

    /// A write of this agent's ledger file ended: a failure backs the next write off and is logged
    /// once per change of error (a full disk, a folder in the file's place), a recovery once.
    private func noteWrite(_ error: SystemError?, ledger: QuotaLedger, now: Int64) {
        if let error {
            if ledger.writeFailed(error, now: now) {
                logger.warning("cannot write the quota ledger, retrying with backoff: \(error)", metadata: ["file": "\(ledger.path)"])
            }
        } else if ledger.writeSucceeded() {
            logger.info("quota ledger written again", metadata: ["file": "\(ledger.path)"])
        }
    }

    /// Each quota's use from this agent's counts and the others' last read, logged where it changed.
    private func noteUsages(wall: Int64) {
        guard let ledger else { return }
        let fresh = QuotaUsage.usages(config.quotas, counts: QuotaLedger.adding(ledger.own, to: others), now: wall,
                                      calendar: calendar)
        for usage in fresh {
            let before = quotas.first { $0.quota == usage.quota }
            if usage.isReached, before?.isReached != true || before?.period != usage.period {
                logger.info("quota reached: no new \(usage.quota.className.map { "transfer of class \($0)" } ?? "transfer") until \(Timestamp.local(seconds: usage.reset))",
                            metadata: ["quota": "\(usage.quota.label)", "used": "\(usage.used)", "bytes": "\(usage.quota.bytes)",
                                       "running": "\(usage.quota.running.rawValue)"])
            } else if !usage.isReached, before?.isReached == true {
                logger.info("quota available again", metadata: ["quota": "\(usage.quota.label)", "period": "\(usage.period)"])
            }
        }
        quotas = fresh
    }

    private func logWindows(_ fresh: ScheduleState, changed: Bool) {
        var metadata: Logger.Metadata = ["windows": "\(fresh.windows.isEmpty ? "none" : fresh.labels(config.schedule).joined(separator: "; "))"]
        if let next = fresh.nextChange { metadata["next_change"] = "\(Timestamp.local(seconds: next))" }
        if let rate = fresh.rateLimit { metadata["rate_limit"] = "\(rate)" }
        if let total = fresh.concurrency { metadata["concurrency"] = "\(total)" }
        if let pause = fresh.pause { metadata["pause"] = "\(pause == .all ? "true" : "new")" }
        if changed {
            logger.info("schedule window change", metadata: metadata)
        } else if !config.schedule.isEmpty {
            logger.debug("schedule in force", metadata: metadata)
        }
    }

    /// Which running transfers pause now: all in a `pause: true` window; those of a scope whose
    /// `running: pause` quota is used up.
    private func suspension() -> ((String) -> Bool)? {
        if state.pause == .all { return { _ in true } }
        let pausing = quotas.filter { $0.isReached && $0.quota.running == .pause }.map(\.quota.className)
        guard !pausing.isEmpty else { return nil }
        return { className in pausing.contains { $0 == nil || $0 == className } }
    }

    /// Why and until when (seconds since 1970) a download of this class may not start; nil: it may.
    func hold(className: String) -> (reason: Job.WaitReason, until: Int64)? {
        var found: (reason: Job.WaitReason, until: Int64)?
        if state.pause != nil, let next = state.nextChange { found = (.schedule, next) }
        for usage in quotas where usage.isReached && (usage.quota.className == nil || usage.quota.className == className) {
            if found.map({ usage.reset > $0.until }) ?? true { found = (.quota, usage.reset) }
        }
        return found
    }

    /// Whether a download of this class waits for the ledger exchange on its way (`QuotaLedgerSync`)
    /// before it starts: a quota covers the class, and the exchange brings the other agents' counts
    /// to the decision (an agent with nothing running exchanges at once, so that what it starts
    /// next obeys every agent's counts, not the ones of up to a second ago).
    func awaitsLedger(className: String) -> Bool {
        syncInFlight && quotas.contains { $0.quota.className == nil || $0.quota.className == className }
    }

    /// Sets `entry` aside until its hold ends when one is in force: a claimed download waits
    /// (state `waiting`, its reason and `retry_at` in the state file), an inbox job stays unclaimed.
    func holdsBack(_ entry: Scheduler.Entry) -> Bool {
        guard isConfigured, let (reason, until) = hold(className: entry.className) else { return false }
        let now = clock.now()
        let due = now + max(100, (until - clock.wallSeconds()) * 1000)
        runner.scheduler.enqueue(entry, due: due)
        guard entry.unit.download != Scheduler.Unit.wholeJob else {
            heldInbox.insert(entry.unit)
            return true
        }
        guard let job = table.job(entry.unit.job) else { return true }
        let retryAt = Timestamp.format(seconds: until)
        if !job.handle(.heldBack(entry.unit.download, until: due, reason: reason, retryAt: retryAt)).isEmpty {
            logger.info("held back by the \(reason == .schedule ? "schedule" : "quota") until \(Timestamp.local(seconds: until))", metadata: ["job": "\(job.record.job)"])
            filer.saveState(job)
        }
        return true
    }

    /// Puts every held download back in the ready queue, to be held again if it still must wait.
    private func releaseHeld() {
        var released: Set<Scheduler.Unit> = heldInbox
        heldInbox.removeAll()
        for job in table.allJobs {
            let held = job.indices.filter { job.phase(of: $0).heldReason != nil }
            guard !job.handle(.holdsEnded).isEmpty else { continue }
            for index in held { released.insert(Scheduler.Unit(job: job.id, download: index)) }
            filer.saveState(job)
        }
        guard !released.isEmpty else { return }
        runner.scheduler.promote { released.contains($0.unit) }
    }

    /// The monotonic time of the next window change while transfers run (their limits change
    /// then), or of a backed-off ledger write; an idle agent is otherwise woken by its held
    /// downloads' due times alone.
    func nextWake() -> Int64? {
        let retry = syncInFlight || table.runningCount > 0 ? nil : ledger?.writeRetryAt.map { max($0, clock.now() + 10) }
        guard table.runningCount > 0, let next = state.nextChange else { return retry }
        let change = clock.now() + max(0, next - clock.wallSeconds()) * 1000 + 1
        return retry.map { min($0, change) } ?? change
    }

    /// At the end of a run: the last bytes counted in the ledger.
    func finish() {
        guard !config.quotas.isEmpty else { return }
        refreshQuotas(wall: clock.wallSeconds(), now: clock.now(), force: true)
    }

    /// `run --once` left work waiting: says so when a window or a quota holds it back.
    func explainWaiting() {
        guard let (reason, until) = hold(className: "default") ?? quotas.first(where: \.isReached).map({ (.quota, $0.reset) }) else { return }
        logger.notice("jobs left waiting: held back by the \(reason == .schedule ? "schedule" : "quota") until \(Timestamp.local(seconds: until))",
                      metadata: ["reason": "\(reason == .schedule ? "schedule" : "quota")"])
    }
}

