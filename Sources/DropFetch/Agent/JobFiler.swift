import Glibc

/// What follows a job's filing (`JobPublisher.file`): logs, metrics, hooks, and a failed filing
/// retried until it succeeds; and the state files of running jobs.
final class JobFiler: AgentPart {
    let context: AgentContext
    /// Some job handled by this run failed or was cancelled (exit 1 for `run --once`).
    private(set) var handledFailure = false
    unowned var intake: JobIntake!

    /// A state file a descriptor shortage kept from being written: when it is tried again
    /// (monotonic ms), and how many times it was tried.
    private struct OwedState {
        var due: Int64
        var tries: Int
    }

    /// The owed state files, by work name.
    private var owedStates: [String: OwedState] = [:]

    /// Tries of a state file that finds no descriptor before it is given up with an error line:
    /// about ten seconds of shortage, a second apart.
    static let owedStateTries = 10

    init(context: AgentContext) {
        self.context = context
    }

    /// When the first owed state file is due (`pollTimeout`).
    var nextOwedState: Int64? { owedStates.values.lazy.map(\.due).min() }

    /// Writes the state files owed since a descriptor shortage that are due by `now`, of the jobs
    /// still here: a crash, a stop or a hold then finds the name a download took and when its
    /// retry is due. A job being filed keeps its entry until its filing is over (filed, its entry
    /// goes; given up, its state is written).
    func writeOwedStates(now: Int64) {
        guard !owedStates.isEmpty else { return }
        for (workName, owed) in owedStates where owed.due <= now {
            guard let job = table.job(workName: workName) else {
                owedStates[workName] = nil
                continue
            }
            if table.isCommitting(job) {
                owedStates[workName]?.due = clock.now() + DescriptorLimit.retryDelay
                continue
            }
            owedStates[workName] = nil
            saveState(job, tries: owed.tries)
        }
    }

    /// Moved away meanwhile (hold, mv): it is not this agent's to file any more. The records that
    /// prove its published files are its own are put back for when it returns.
    func leftBeforeFiling(_ job: Job, _ record: StatusRecord) {
        for case let (folder, name, saved?) in job.publishedFiles {
            if let key = spool.recordKey { PartFile.restoreRecord(saved, named: name, in: folder, key: key) }
        }
        logger.info("job left the work folder before it was filed", metadata: ["job": "\(record.job)"])
        table.remove(job)
    }

    /// A job in its place: logged, counted, announced, forgotten.
    func filed(_ job: Job, _ record: StatusRecord, at filed: String) {
        if record.state != .done { handledFailure = true }
        JobLog.filed(record, at: filed, logger: logger)
        announce(record, filedAt: filed)
        context.metrics?.filed(record, now: clock.wallSeconds())
        table.remove(job)
        if table.isEmpty, intake.inbox.count == 0, intake.claimsInFlight == 0, let idle = config.hooks.onIdle {
            context.hooks.run(idle, event: "on_idle", environment: ["DROPFETCH_STATE": "idle"])
        }
    }

    /// A job `dropfetch cancel` filed in failed/ while this agent held it: found there by its
    /// claim's inode (lstat(2)), then logged, announced (`on_failed`) and counted like a job this
    /// agent cancelled.
    func filedByCancel(_ job: Job) {
        for name in Set([job.record.job, job.workName]) {
            for candidate in Spool.candidateNames(name).prefix(1000) {
                let path = FileSystem.join(spool.failed, candidate)
                guard let info = try? FileSystem.lstatus(path), UInt64(info.st_ino) == job.owner.claim else { continue }
                let statusPath = spool.failed + "/" + Spool.statusName(forJob: candidate)
                guard let record = spool.readRecord(at: statusPath), record.state == .cancelled else { return }
                handledFailure = true
                JobLog.filed(record, at: path, logger: logger)
                announce(record, filedAt: path)
                context.metrics?.filed(record, now: clock.wallSeconds())
                return
            }
        }
    }

    func filingFailed(_ job: Job, _ record: StatusRecord, _ error: SystemError) {
        if DescriptorLimit.isShortage(error) {
            // No fault of the spool: tried again once finishes close their parts, without an
            // error line each time (the runner's shortage warning says it once a run).
            intake.runner.noteDescriptorShortage(error.description)
            logger.debug("filing \(job.workName) waits for a file descriptor: \(error)", metadata: ["job": "\(record.job)"])
            return table.filingFailed(job, record: record, retryAt: clock.now() + DescriptorLimit.retryDelay, counted: false)
        }
        let failures = table.filingFailures(of: job) + 1
        let delay = Int64(Backoff.spoolStep(failures: failures, initial: .milliseconds(500)).milliseconds)
        logger.error("cannot file \(job.workName), retrying in \(delay) ms: \(error)", metadata: ["job": "\(record.job)"])
        table.filingFailed(job, record: record, retryAt: clock.now() + delay)
    }

    /// Runs `hooks.on_done` or `hooks.on_failed` for a filed job (docs/config.md, hooks).
    private func announce(_ record: StatusRecord, filedAt path: String) {
        let done = record.state == .done
        guard let hook = done ? config.hooks.onDone : config.hooks.onFailed else { return }
        let files = record.downloads.filter { $0.state == .done }.compactMap(\.file)
        context.hooks.run(hook, event: done ? "on_done" : "on_failed", environment: [
            "DROPFETCH_JOB": record.job, "DROPFETCH_STATE": record.state.rawValue,
            "DROPFETCH_STATUS_FILE": FileSystem.directoryName(of: path) + "/"
                + Spool.statusName(forJob: FileSystem.baseName(of: path)),
            "DROPFETCH_FILES": files.joined(separator: "\n"),
        ])
    }

    /// Rewrites `work/<agent>/<name>.state.json` of running jobs with their progress (about once a
    /// second), and checkpoints their data (PartFile.recordDurable) through the group commit.
    func refreshStateFiles() {
        var running: [Job] = []
        for (transfer, unit) in table.allTransfers {
            // Writeback was started as the data arrived, so this fdatasync finds little to do;
            // it runs with the group commit, and the record counts what it made durable.
            let part = transfer.part
            if let group = table.group(key: transfer.easy.key) {
                checkpointPieces(group, unit)
            } else if transfer.written > part.record.bytes {
                let size = part.size
                let cuts = part.cuts
                context.groupCommit.sync([.data(part.file)]) { [table] error in
                    // Not once the part is being published: its filing names the record file to
                    // remove only if it exists by then (a new part has none until needed).
                    guard error == nil, let job = table.job(unit.job), job.part(of: unit.download) === part,
                          job.phase(of: unit.download) != .publishing, !table.isCommitting(job) else { return }
                    try? part.recordDurable(size, cuts: cuts)
                }
            }
            guard let job = table.job(unit.job) else { continue }
            job.apply(.progress(bytes: transfer.downloadedBytes, size: transfer.total), to: unit.download)
            if !running.contains(where: { $0 === job }) { running.append(job) }
        }
        for job in running { saveState(job) }
    }

    /// A split download's checkpoint: the pieces written so far go to its record at once (a kill
    /// on this boot resumes them), and count as synced once the group commit's fdatasync(2) is done.
    private func checkpointPieces(_ group: SegmentedDownload, _ unit: Scheduler.Unit) {
        let part = group.part
        let map = group.plan.map
        guard map.done != part.record.pieces ?? [] else { return }
        do {
            try part.recordPieces(map)
        } catch {
            return logger.warning("cannot record the pieces written: \(error)", metadata: ["file": "\(part.path)"])
        }
        crashPlan?.reach(.piecesRecorded)
        let cuts = part.cuts
        context.groupCommit.sync([.data(part.file)]) { [table] error in
            guard error == nil, let job = table.job(unit.job), job.part(of: unit.download) === part,
                  job.phase(of: unit.download) != .publishing, !table.isCommitting(job) else { return }
            try? part.recordSynced(pieces: map, cuts: cuts)
        }
    }

    /// Writes the job's state file through the group commit (its temp file's creation can take
    /// milliseconds), in the order asked; not synced.
    /// A job being filed has no state to save: its filing removes the file (on another worker).
    /// `tries`: how many times this state found no descriptor before (`writeOwedStates`).
    func saveState(_ job: Job, tries: Int = 0) {
        guard !table.isCommitting(job) else { return }
        let workName = job.workName
        let path = spool.statePath(for: workName)
        job.handle(.stateWritten)
        context.groupCommit.sync([.replacedFile(path: path, bytes: job.snapshot().encoded())]) { [self] error in
            if let error {
                guard DescriptorLimit.isShortage(error), tries + 1 < JobFiler.owedStateTries else {
                    let given = tries > 0 ? " (tried \(tries + 1) times)" : ""
                    return logger.error("cannot write the state of \(workName)\(given): \(error)")
                }
                // No fault of the spool: written again a moment later (`writeOwedStates`), without
                // an error line each time (the runner's shortage warning says it once a run).
                intake.runner.noteDescriptorShortage(error.description)
                logger.debug("the state of \(workName) waits for a file descriptor: \(error)")
                owedStates[workName] = OwedState(due: clock.now() + DescriptorLimit.retryDelay, tries: tries + 1)
                return
            }
            if let current = table.job(workName: workName) {
                guard table.isCommitting(current) else { return }
                // Its filing began on the finish-steps worker, which removes the state once the job
                // file is filed: while the job file is still here, recovery needs the state (its
                // name, routing folder and class; found by the soak), and the filing removes it.
                if FileSystem.exists(FileSystem.join(spool.work, workName)) { return }
            }
            // Filed, or left the work folder (hold, cancel) while this was written: stale.
            try? FileSystem.removeIfPresent(path)
        }
    }
}
