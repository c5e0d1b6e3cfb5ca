import Glibc

/// The inbox side of the agent: what waits there (InboxIndex, unclaimed), claiming a job when
/// the scheduler is about to run it, and admitting a claimed job (read, validate, classify, queue).
final class JobIntake: AgentPart {
    let context: AgentContext
    /// What waits in the inbox, unclaimed.
    private(set) var inbox = InboxIndex()
    unowned var runner: JobRunner!
    unowned var publisher: JobPublisher!

    init(context: AgentContext) {
        self.context = context
    }

    /// Forgets the index (a config reload changes classes and priorities) and reads the inbox again.
    func reindex() {
        runner.scheduler.remove { $0.unit.download == Scheduler.Unit.wholeJob }
        inbox = InboxIndex()
        scanInbox()
    }

    /// Looks at every job file in the inbox: settled ones are indexed, the rest looked at again
    /// once they may have settled (a writer may still be at work). Each new file is opened once:
    /// its queue hints and its time (arrival order, settle check) come from that read's fstat(2).
    /// They are indexed by path: the scheduler orders by arrival, and among equal arrivals by
    /// index order, so the queue is as if sorted by (mtime, path) without holding every file's
    /// hints at once.
    func scanInbox() {
        let now = clock.wallNanoseconds()
        let scan = spool.scanInboxReporting(withTimes: false)
        noteScanProblems(scan)
        releasedStates.formUnion(scan.releasedStates)
        let paths = scan.entries.lazy.map(\.relativePath).filter { [inbox] in !inbox.contains($0) }.sorted()
        guard context.acceptsWork else { return }
        inbox.reserveCapacity(paths.count)
        runner.scheduler.reserveCapacity(paths.count)
        for path in paths {
            let hints = self.hints(for: path)
            let modified = hints.modified ?? (try? FileSystem.lstatus(FileSystem.join(spool.inbox, path))).map {
                Int64($0.st_mtim.tv_sec) * 1_000_000_000 + Int64($0.st_mtim.tv_nsec)
            } ?? 0
            // Not in the index (filtered above) and settled now: queued without asking again.
            if inbox.scanned(path, modified: modified, now: now) { add(path, arrival: modified, hints: hints) }
        }
    }

    /// Released states (`.x.state.json`, relative to the inbox) the listing or the watch showed
    /// and no claim took up yet: only a job with one has it looked for (`Spool.releasedStatePath`).
    /// `release` puts it in place before the job, so the watch sees it first.
    private var releasedStates: Set<String> = []

    /// Released states the inbox watch saw arrive.
    func noteReleasedStates(_ paths: [String]) {
        releasedStates.formUnion(paths)
    }

    /// The last scan's failure to list a folder of the inbox, if any: a `run --once` that could
    /// not read its inbox does not exit 0 (EX_TEMPFAIL, docs/cli.md).
    private(set) var scanFailure: SystemError?
    /// Claimed job files left unread in work/ for want of descriptors (`JobFileReader.Failure.transient`).
    private(set) var unreadClaims = 0

    /// Logs a folder that could not be listed, and each routing folder too deep to be read once.
    private func noteScanProblems(_ scan: Spool.InboxScan) {
        scanFailure = scan.failure
        if let failure = scan.failure { logger.error("cannot read the inbox (read again at the next scan or run): \(failure)") }
        for folder in scan.tooDeep where spool.reportedDeepFolders.insert(folder).inserted {
            logger.warning("routing folder is more than \(Spool.InboxScan.maxDepth) folders deep: its jobs are not read",
                           metadata: ["folder": "\(folder)"])
        }
    }

    /// Scanned files that were still changing: indexed if settled since, else watched again.
    func recheckUnsettled() {
        let now = clock.wallNanoseconds()
        for path in inbox.takeUnsettled(dueBy: now) {
            guard let info = try? FileSystem.lstatus(FileSystem.join(spool.inbox, path)) else { continue }
            let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            if inbox.scanned(path, modified: modified, now: now) { index(path, arrival: modified, settled: true) }
        }
    }

    /// Queues an inbox job without claiming it: its priority, class and host are read from the
    /// file (an unreadable one is queued as it is, to be filed as invalid once claimed).
    func index(_ path: String, arrival: Int64, settled: Bool) {
        guard context.acceptsWork else { return }
        // Written again since it was read: the claim reads it anew.
        guard !inbox.contains(path) else { return inbox.forgetContents(of: path) }
        inbox.settledByEvent(path)
        add(path, arrival: arrival, hints: hints(for: path))
    }

    /// Queues a job file the index does not hold yet and that has settled.
    private func add(_ path: String, arrival: Int64, hints: QueueHints) {
        let priority = hints.priority
        let className = hints.className
        let host = hints.host
        var arrivalTime = arrival
        if !releasedStates.isEmpty, releasedStates.contains(Spool.releasedStatePath(forJob: path)),
           let submitted = spool.releasedState(of: path, now: clock.wallSeconds())?.submitted {
            arrivalTime = submitted * 1_000_000_000
        }
        let id = table.makeID()
        inbox.add(path, id: id, arrival: arrivalTime, contents: hints.contents)
        runner.scheduler.enqueue(Scheduler.Entry(unit: Scheduler.Unit(job: id, download: Scheduler.Unit.wholeJob),
                                          priority: priority, arrival: Int(arrivalTime), host: host,
                                          className: className))
    }

    /// What the queue needs of an inbox job before it is claimed; the defaults for a file that
    /// cannot be read or parsed (it is filed as invalid once claimed).
    struct QueueHints {
        var priority = 0
        var className = "default"
        var host = ""
        /// The file's modification time (nanoseconds since the epoch) when it was read.
        var modified: Int64?
        /// The file as it was read, for the claim (`InboxIndex.keep`).
        var contents: JobFileReader.Contents?
    }

    /// The queue hints of the inbox file at `path`, read from the file: its priority, class and host.
    private func hints(for path: String) -> QueueHints {
        var hints = QueueHints()
        let entry = Spool.InboxEntry(relativePath: path, modified: 0)
        let limit = context.shared.config.limits.maxJobFileSize
        guard let routing = try? spool.routingFolder(entry.folder),
              case .success(var contents) = JobFileReader.contents(of: entry.name, in: routing, limit: limit)
        else { return hints }
        // Parsed here once: the claim and admission take the spec along with the bytes.
        let parsed = contents.parse()
        hints.modified = contents.modified
        hints.contents = contents
        guard case .success(let spec) = parsed else { return hints }
        // The classes alone: `resolveClass` on the config copied the whole of it a job.
        let classes = context.shared.config.classes
        let found = (try? Config.resolveClass(spec: spec, folder: entry.folder, among: classes).get()) ?? nil
        hints.className = found?.name ?? "default"
        hints.priority = spec.priority ?? found?.priority ?? 0
        hints.host = spec.downloads.first?.host() ?? ""
        return hints
    }

    /// Claims an inbox job the scheduler chose to run now (rename into work/; another agent may
    /// have taken it) and queues its downloads. The claim runs on a worker (`JobClaim`) and holds
    /// a place in `admission` until it is back, so that no more jobs are claimed than could run.
    func claimCandidate(_ entry: Scheduler.Entry) {
        guard let candidate = inbox.candidate(entry.unit.job) else { return }
        let known = inbox.remove(id: entry.unit.job)
        let released = !releasedStates.isEmpty && releasedStates.remove(Spool.releasedStatePath(forJob: candidate.path)) != nil
        let claim = JobClaim(Spool.InboxEntry(relativePath: candidate.path, modified: 0), in: spool,
                             limit: config.limits.maxJobFileSize, adoptsReleasedState: released, known: known,
                             naming: runner.names.claimNaming(), now: clock.wallSeconds())
        runner.admission.started(host: entry.host, className: entry.className)
        claimsInFlight += 1
        context.startSteps.sync([.task(claim)]) { [self] _ in
            runner.admission.finished(host: entry.host, className: entry.className)
            claimsInFlight -= 1
            defer { if claimsInFlight == 0 { departedDuringClaims.removeAll() } }
            if let (path, root) = claim.openedRoot { runner.names.adopt(root, at: path, generation: claim.request.naming?.generation) }
            switch claim.ending {
            case .claimed(let workName, let previous, let contents):
                // Held or moved away while the claim was on its way back: not this agent's any more.
                if !departedDuringClaims.isEmpty, departedDuringClaims.contains(workName), !FileSystem.exists(FileSystem.join(spool.work, workName)) {
                    if let first = claim.firstPart { drop(first, of: claim.entry, workName: workName) }
                    return logger.info("job left the work folder as it was claimed", metadata: ["job": "\(workName)"])
                }
                if !claimFailures.isEmpty { claimFailures[candidate.path] = nil }
                logger.debug("claimed \(candidate.path)")
                // The job's name is its job file's name; a released state brings hints only.
                // The claim's acceptance stands while the config it was made under is in force.
                let accepted = claim.firstPart.flatMap { $0.generation == runner.names.generation ? $0.accepted : nil }
                let job = admit(workName: workName, jobName: claim.entry.name, folder: claim.entry.folder,
                                previous: previous, arrival: candidate.arrival, contents: contents, accepted: accepted)
                if let first = claim.firstPart { takeFirstPart(first, of: job) }
            case .gone:
                if !claimFailures.isEmpty { claimFailures[candidate.path] = nil }
            case .notFollowed(let error):
                if !claimFailures.isEmpty { claimFailures[candidate.path] = nil }
                logger.warning("job not claimed: its routing folder is not a folder in the inbox any more",
                               metadata: ["job": "\(candidate.path)", "error": "\(error)"])
            case .failed(let error):
                // Still in the inbox, with its released state if it had one.
                if released { releasedStates.insert(Spool.releasedStatePath(forJob: candidate.path)) }
                retryClaim(candidate, entry, error)
            }
        }
    }

    /// The part taken with the claim goes to the job's first download, when the job was admitted
    /// as the claim's worker saw it (same class, no reload since) and that download has none yet;
    /// else it is removed, and the download takes its name when it starts, under the config in force.
    ///
    /// An empty one numbered past the descriptor floor is closed, kept on disk as the download's
    /// (SetAsidePart): parts of claimed jobs that wait to run would otherwise take the descriptors
    /// their connections need (under `ulimit -n 48`, 16 claims ahead held them all and no transfer
    /// ever connected).
    private func takeFirstPart(_ first: JobClaim.FirstPart, of admitted: Job?) {
        // A job released from hold (or retried) whose state names another file takes that name
        // again when it starts (`PartReservation.EarlierName`).
        guard let job = admitted, first.generation == runner.names.generation,
              job.record.className == first.className, !job.indices.isEmpty,
              job.part(of: 0) == nil, job.phase(of: 0) == .queued,
              job.earlierName(of: 0)?.isAt(first.part.location) ?? true else {
            return first.part.discard()
        }
        // The root the part lies in, not one looked up by path again (a folder moved meanwhile).
        job.keepDestination(first.root)
        if runner.noteDescriptor(of: first.part), first.part.holdsNoData { return job.setAside(first.part, for: 0) }
        job.take(first.part, for: 0)
    }

    /// A part taken with a claim whose job left as it was claimed: removed, unless the job waits in
    /// hold/ or the inbox or was claimed again (its owner is the same, and its next start finds it).
    private func drop(_ first: JobClaim.FirstPart, of entry: Spool.InboxEntry, workName: String) {
        let place = spool.whereIs(job: entry.name, workName: workName, folder: entry.folder)
        let claimedAgain = (try? FileSystem.lstatus(FileSystem.join(spool.work, workName))).map { UInt64($0.st_ino) == first.part.record.claim }
        if place == .hold || place == .inbox || claimedAgain == true { return }
        first.part.discard()
    }

    /// A claim that failed (EIO, EACCES, EROFS…) leaves the job in the inbox: it is indexed again
    /// and tried after a delay that doubles up to a minute, so `run --once` neither ends as if
    /// it were done nor spins on a broken folder.
    ///
    /// One the agent could not make for want of a descriptor (EMFILE) is no fault of the folder:
    /// tried again in a second, without growing the delay, once the runner's shortage hold allows.
    private func retryClaim(_ candidate: InboxIndex.Candidate, _ entry: Scheduler.Entry, _ error: SystemError) {
        let delay: Int64
        if DescriptorLimit.isShortage(error) {
            runner.noteDescriptorShortage(error.description)
            delay = DescriptorLimit.retryDelay
        } else {
            let failures = (claimFailures[candidate.path] ?? 0) + 1
            claimFailures[candidate.path] = failures
            delay = Int64(Backoff.spoolStep(failures: failures, initial: .seconds(1)).milliseconds)
            logger.error("cannot claim \(candidate.path), trying again in \(delay / 1000) s: \(error)")
        }
        guard !inbox.contains(candidate.path) else { return }
        let id = table.makeID()
        inbox.add(candidate.path, id: id, arrival: candidate.arrival)
        var retry = entry
        retry.unit = Scheduler.Unit(job: id, download: Scheduler.Unit.wholeJob)
        runner.scheduler.enqueue(retry, due: clock.now() + delay)
    }

    /// Failed claims in a row, by inbox path (the delay before the next try grows with them).
    private var claimFailures: [String: Int] = [:]

    /// Claims sent to the worker and not back yet.
    private(set) var claimsInFlight = 0
    /// No new claim is sent: a rescan waits for those in flight.
    var holdsClaims = false
    /// Names that left the work folder while claims were in flight, before any job had them.
    private var departedDuringClaims: Set<String> = []

    /// A name left the work folder and no job has it: one of the claims in flight may be it.
    func departed(_ workName: String) {
        if claimsInFlight > 0 { departedDuringClaims.insert(workName) }
    }

    /// Reads, validates and queues a job that is now in `work/<agent>/`; an invalid one is filed
    /// in failed/ at once. `previous` is its state file when it is being recovered or released.
    /// The job, unless it was filed as invalid or could not be read.
    @discardableResult
    func admit(workName: String, jobName: String, folder: String, previous: StatusRecord?, arrival: Int64,
               recovered: Bool = false, distrustsData: Bool = false,
               contents read: Result<JobFileReader.Contents, JobFileReader.Failure>? = nil,
               accepted claimed: JobAcceptance? = nil) -> Job? {
        let now = Timestamp.format(seconds: clock.wallSeconds())
        var record = StatusRecord(job: jobName, state: .queued, className: "default", priority: 0,
                                  agent: agentID, submitted: previous?.submitted ?? now)
        record.folder = folder
        record.started = previous?.started
        record.attempts = previous?.attempts ?? 0
        let spec: JobSpec
        // The claim is the inode the file was read from: one open and one fstat(2), no lstat(2).
        let claim: UInt64
        switch read ?? spool.readClaimedJob(workName, limit: config.limits.maxJobFileSize) {
        case .failure(.transient(let error)):
            // Not the file's fault: it stays in work/ and is admitted again by the next recovery.
            unreadClaims += 1
            logger.error("cannot read job file (read again at the next scan or run): \(error)", metadata: ["job": "\(jobName)"])
            return nil
        case .failure(.invalid(let error)):
            publisher.fileImmediately(workName, record, Failure(.invalidJob, "\(jobName): \(error)"))
            return nil
        case .success(var contents):
            claim = contents.inode
            // Parsed by the index or the claim's worker already, unless recovery read it.
            switch contents.parse() {
            case .success(let parsed): spec = parsed
            case .failure(let error):
                publisher.fileImmediately(workName, record, Failure(.invalidJob, "\(jobName): \(error)"))
                return nil
            }
        }
        record.downloads = spec.downloads.map { DownloadStatus(url: Redaction.url($0.urls[0]), file: nil, state: .queued) }
        let accepted: JobAcceptance
        if let claimed {
            accepted = claimed
        } else {
            switch JobAcceptance.check(spec, folder: folder, config: context.shared.config) {
            case .success(let found): accepted = found
            case .failure(let refusal):
                publisher.fileImmediately(workName, record, refusal.failure(jobName: jobName, protocols: config.protocols))
                return nil
            }
        }
        record.className = accepted.className
        record.priority = accepted.priority
        record.ignoredOptions = spec.ignoredOptions.isEmpty ? nil : spec.ignoredOptions

        // A claim writes a state first for a job from a routing folder or under another name (SpoolClaim).
        let claimWroteState = !folder.isEmpty || workName != jobName
        let job = Job(id: table.makeID(), workName: workName, owner: PartOwner(job: jobName, claim: claim), spec: spec,
                      record: record, arrival: arrival, stateFileMayExist: recovered || previous != nil || claimWroteState,
                      distrustsData: distrustsData, clock: clock)
        table.add(job)
        if let previous { restore(job, from: previous) }
        // A fresh job under `duplicates: skip` (or `duplicates=skip`) is judged before it fetches.
        // (Not one an earlier run began: the machine asks only while no attempt was made.)
        if (spec.duplicates ?? config.duplicates) == .skip { job.handle(.duplicateCheckAsked) }
        if job.isFinished {
            publisher.fileJob(job)
            return job
        }
        // A retry's backoff carries over; a hold by a window or a quota does not (docs/config.md:
        // after a restart the gate decides again on the clock and the config of this run).
        let due = previous.flatMap { $0.waitReason == nil ? $0.retryAt : nil }.flatMap(Timestamp.parse).map { wall in
            clock.now() + max(0, wall - clock.wallSeconds()) * 1000
        }
        for index in job.indices where !job.isFinished(index) {
            if let due {
                runner.carryOut(job.apply(.waitsFromEarlierRun(until: due), to: index), job, index)
            } else {
                runner.scheduler.enqueue(job.schedulerEntry(index))
            }
        }
        return job
    }


    /// Carries over what an earlier run recorded: finished downloads and attempts, and the names
    /// the others had taken, which their next reservations try first (partial data is found again
    /// through its record there).
    func restore(_ job: Job, from previous: StatusRecord) {
        // An attempt interrupted by a hold, a shutdown or a crash goes on without costing one.
        for index in job.indices where index < previous.downloads.count {
            let saved = previous.downloads[index]
            job.apply(.restored(saved: saved, attempts: previous.attempts), to: index)
            if saved.state != .done, let file = saved.file { job.noteEarlierName(FileSystem.baseName(of: file), for: index) }
        }
    }
}
