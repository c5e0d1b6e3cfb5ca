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

    /// The finish protocol (Spool.file); when it fails (ENOSPC, EIO) the job stays claimed and
    /// filing is retried with backoff, never forgotten.
    func file(_ job: Job, _ record: StatusRecord) {
        let outcome: Spool.Outcome = record.state == .done ? .done : .failed
        do {
            let filed = try spool.file(job.workName, as: outcome, status: record) {
                for case let (folder, name, _)? in job.downloads.map(\.publishedRecord) { try? folder.removeIfPresent(name) }
            }
            if outcome == .failed { handledFailure = true }
            JobLog.filed(record, at: filed, logger: logger)
            announce(record, filedAt: filed)
            context.metrics?.filed(record)
        } catch where error.code == ENOENT && !FileSystem.exists(spool.work + "/" + job.workName) {
            // Moved away meanwhile (hold, mv): it is not this agent's to file any more. The records
            // that prove its published files are its own are put back for when it returns.
            for case let (folder, name, saved?)? in job.downloads.map(\.publishedRecord) {
                PartFile.restoreRecord(saved, named: name, in: folder)
            }
            logger.info("job left the work folder before it was filed", metadata: ["job": "\(record.job)"])
            table.remove(job)
            return
        } catch {
            let failures = table.filingFailures(of: job) + 1
            let delay = Int64(min(60_000, 250 << min(failures, 8)))
            logger.error("cannot file \(job.workName), retrying in \(delay) ms: \(error)", metadata: ["job": "\(record.job)"])
            table.filingFailed(job, record: record, retryAt: MonotonicClock.now() + delay)
            return
        }
        table.remove(job)
        if table.isEmpty, intake.inbox.count == 0, let idle = config.hooks.onIdle {
            context.hooks.run(idle, event: "on_idle", environment: ["DROPFETCH_STATE": "idle"])
        }
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
    /// second), after making the data they count durable (PartFile.checkpoint).
    func refreshStateFiles() {
        var running: [Job] = []
        for (transfer, unit) in table.allTransfers {
            // Writeback was started as the data arrived, so this fdatasync finds little to do.
            if transfer.written > transfer.part.record.bytes {
                try? transfer.part.checkpoint()
            }
            guard let job = table.job(unit.job) else { continue }
            job.downloads[unit.download].status.bytes = transfer.written
            job.downloads[unit.download].status.size = transfer.total
            if !running.contains(where: { $0 === job }) { running.append(job) }
        }
        for job in running { saveState(job) }
    }

    func saveState(_ job: Job) {
        do {
            try spool.writeState(job.snapshot(), for: job.workName)
        } catch {
            logger.error("cannot write the state of \(job.workName): \(error)")
        }
    }
}
