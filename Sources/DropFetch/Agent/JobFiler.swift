import Glibc

/// Filing: a finished job's status file into done/ or failed/ and the job beside it (retried
/// until it succeeds), its hooks, and the state files of running jobs.
final class JobFiler: AgentPart {
    let context: AgentContext
    /// Some job handled by this run failed or was cancelled (exit 1 for `run --once`).
    private(set) var handledFailure = false
    unowned var intake: JobIntake!

    init(context: AgentContext) {
        self.context = context
    }

    /// Files a job that never queued (invalid, unsupported) in failed/.
    func fileImmediately(_ workName: String, _ base: StatusRecord, _ failure: Failure) {
        var record = base
        record.state = .failed
        record.error = failure
        record.finished = Timestamp.now()
        record.folder = nil
        for index in record.downloads.indices {
            record.downloads[index].state = .failed
            record.downloads[index].error = failure
        }
        let job = Job(id: table.makeID(), workName: workName, owner: PartOwner(job: record.job, claim: 0),
                      spec: JobSpec(downloads: []), record: record, arrival: 0)
        table.add(job)
        file(job, record)
    }

    /// Files a job whose downloads are all over, in done/ or failed/.
    func fileJob(_ job: Job) {
        var record = job.snapshot()
        let failures = record.downloads.filter { $0.state != .done }
        record.state = failures.isEmpty ? .done : (failures.allSatisfy { $0.state == .cancelled } ? .cancelled : .failed)
        record.finished = Timestamp.now()
        record.folder = nil
        record.retryAt = nil
        if let first = failures.first?.error {
            record.error = failures.count == 1 || record.downloads.count == 1
                ? first
                : Failure(first.kind, "\(failures.count) of \(record.downloads.count) downloads failed; first: \(first.message)")
        }
        file(job, record)
    }

    /// The finish protocol (docs/spool.md) through the group commit: the status written in the work
    /// folder and made durable (both on the worker) → in place in done/ or failed/ with the job
    /// file beside it → both folders durable → announced. When a step fails (ENOSPC, EIO) the job stays claimed and filing is
    /// retried with backoff, never forgotten.
    func file(_ job: Job, _ record: StatusRecord) {
        guard !table.isCommitting(job) else { return }
        let outcome: Spool.Outcome = record.state == .done ? .done : .failed
        let source = spool.work + "/" + job.workName
        let staged: Spool.StagedStatus
        do {
            staged = try spool.planStatus(record, as: outcome, for: source, stagingIn: spool.work)
        } catch where error.code == ENOENT && !FileSystem.exists(source) {
            return leftBeforeFiling(job, record)
        } catch {
            return filingFailed(job, record, error)
        }
        table.committing(job)
        // Written by the group commit's worker: creating it is the longest step of a filing.
        context.groupCommit.sync([.newFile(path: staged.temp, bytes: record.encoded(), mode: 0o644)]) { [self] error in
            if let error {
                spool.discard(staged)
                return filingFailed(job, record, error)
            }
            moveIntoPlace(job, staged, from: source)
        }
    }

    /// The durable status renamed into done/ or failed/ and the job file beside it; announced once
    /// both folders are durable.
    private func moveIntoPlace(_ job: Job, _ staged: Spool.StagedStatus, from source: String) {
        let record = staged.status
        let jobPath: String
        let folders: [DirectoryHandle]
        do {
            folders = try spool.filedFolders(staged.outcome, from: source)
            jobPath = try spool.fileStaged(staged, from: source) {
                for case let (folder, name, _)? in job.downloads.map(\.publishedRecord) { try? folder.removeIfPresent(name) }
            }
        } catch where error.code == ENOENT && !holdsJobFile(source, staged.sourceInode) {
            spool.discard(staged)
            return leftBeforeFiling(job, record)
        } catch {
            spool.discard(staged)
            return filingFailed(job, record, error)
        }
        try? FileSystem.removeIfPresent(spool.statePath(for: job.workName))
        context.groupCommit.sync(folders.map { .folder($0) }) { [self] error in
            // The moves are done; a folder that cannot be synced is reported, not undone.
            if let error { logger.error("the filing of \(job.workName) may not survive a power cut: \(error)") }
            filed(job, record, at: jobPath)
        }
    }

    /// Moved away meanwhile (hold, mv): it is not this agent's to file any more. The records that
    /// prove its published files are its own are put back for when it returns.
    private func leftBeforeFiling(_ job: Job, _ record: StatusRecord) {
        for case let (folder, name, saved?)? in job.downloads.map(\.publishedRecord) {
            PartFile.restoreRecord(saved, named: name, in: folder)
        }
        logger.info("job left the work folder before it was filed", metadata: ["job": "\(record.job)"])
        table.remove(job)
    }

    /// Whether `path` is still the job file (same inode) whose status was staged.
    private func holdsJobFile(_ path: String, _ inode: UInt64) -> Bool {
        (try? FileSystem.lstatus(path)).map { UInt64($0.st_ino) == inode } ?? false
    }

    /// A job in its place: logged, counted, announced, forgotten.
    private func filed(_ job: Job, _ record: StatusRecord, at filed: String) {
        if record.state != .done { handledFailure = true }
        JobLog.filed(record, at: filed, logger: logger)
        announce(record, filedAt: filed)
        context.metrics?.filed(record)
        table.remove(job)
        if table.isEmpty, intake.inbox.count == 0, let idle = config.hooks.onIdle {
            context.hooks.run(idle, event: "on_idle", environment: ["DROPFETCH_STATE": "idle"])
        }
    }

    private func filingFailed(_ job: Job, _ record: StatusRecord, _ error: SystemError) {
        let failures = table.filingFailures(of: job) + 1
        let delay = Int64(min(60_000, 250 << min(failures, 8)))
        logger.error("cannot file \(job.workName), retrying in \(delay) ms: \(error)", metadata: ["job": "\(record.job)"])
        table.filingFailed(job, record: record, retryAt: MonotonicClock.now() + delay)
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
            if transfer.written > part.record.bytes {
                let size = part.size
                let cuts = part.cuts
                context.groupCommit.sync([.data(part.file)]) { [table] error in
                    guard error == nil, let job = table.job(unit.job), job.downloads[unit.download].part === part else { return }
                    try? part.recordDurable(size, cuts: cuts)
                }
            }
            guard let job = table.job(unit.job) else { continue }
            job.downloads[unit.download].status.bytes = transfer.written
            job.downloads[unit.download].status.size = transfer.total
            if !running.contains(where: { $0 === job }) { running.append(job) }
        }
        for job in running { saveState(job) }
    }

    /// Writes the job's state file through the group commit (its temp file's creation can take
    /// milliseconds), in the order asked; not synced.
    func saveState(_ job: Job) {
        let workName = job.workName
        let path = spool.statePath(for: workName)
        context.groupCommit.sync([.replacedFile(path: path, bytes: job.snapshot().encoded())]) { [logger, table] error in
            if let error { return logger.error("cannot write the state of \(workName): \(error)") }
            // The job left the work folder (hold, cancel) while this was written: the file is stale.
            if table.job(workName: workName) == nil { try? FileSystem.removeIfPresent(path) }
        }
    }
}
