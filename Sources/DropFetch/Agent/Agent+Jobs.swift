import Glibc

extension Agent {
    /// Reads, validates and queues a job that is now in `work/<agent>/`; an invalid one is filed
    /// in failed/ at once. `previous` is its state file when it is being recovered.
    func admit(workName: String, jobName: String, folder: String, previous: StatusRecord?) {
        let now = Timestamp.now()
        var record = StatusRecord(job: jobName, state: .queued, className: "default", priority: 0,
                                  agent: agentID, submitted: previous?.submitted ?? now)
        record.folder = folder
        record.attempts = previous?.attempts ?? 0
        record.started = previous?.started

        let spec: JobSpec
        switch JobFileReader.read(spool.work + "/" + workName, limit: config.limits.maxJobFileSize) {
        case .failure(let error):
            return fileImmediately(workName, record, Failure(.invalidJob, "\(jobName): \(error)"))
        case .success(let bytes):
            do {
                spec = try JobFileParser.parse(bytes)
            } catch {
                return fileImmediately(workName, record, Failure(.invalidJob, "\(jobName): \(error)"))
            }
        }
        record.downloads = spec.downloads.map { DownloadStatus(url: Redaction.url($0.urls[0]), file: nil, state: .queued) }
        for download in spec.downloads {
            for url in download.urls {
                let scheme = URLParts(url)?.scheme ?? ""
                guard config.protocols.contains(scheme) else {
                    return fileImmediately(workName, record, Failure(
                        .unsupportedProtocol, "\(jobName): line \(download.line): scheme '\(scheme)' is not in protocols \(config.protocols)"))
                }
            }
        }
        let jobClass: Config.JobClass?
        switch resolveClass(spec: spec, folder: folder) {
        case .success(let found): jobClass = found
        case .failure(let failure):
            return fileImmediately(workName, record, Failure(.invalidJob, "\(jobName): \(failure.message)"))
        }
        record.className = jobClass?.name ?? "default"
        record.priority = spec.priority ?? jobClass?.priority ?? 0

        let job = Job(id: nextJobID, workName: workName, spec: spec, record: record, arrival: nextArrival)
        nextJobID += 1
        nextArrival += 1
        if let previous { restore(job, from: previous) }
        jobs[job.id] = job
        jobIDs[workName] = job.id
        if job.isFinished { return fileJob(job) }
        let due = previous?.retryAt.flatMap(Timestamp.parse).map { wall in
            MonotonicClock.now() + max(0, wall - Int64(time(nil))) * 1000
        }
        for index in job.downloads.indices where !job.downloads[index].isFinished {
            let entry = entry(for: job, index)
            if let due { scheduler.enqueue(entry, due: due) } else { scheduler.enqueue(entry) }
        }
    }

    func entry(for job: Job, _ index: Int) -> Scheduler.Entry {
        Scheduler.Entry(unit: Scheduler.Unit(job: job.id, download: index), priority: job.record.priority,
                        arrival: job.arrival, host: URLParts(job.downloads[index].currentURL)?.host ?? "",
                        className: job.record.className)
    }

    /// After a config reload: jobs that have not started take the new classes and priorities,
    /// and the queue is re-sorted (running and started jobs keep theirs).
    func requeueUnstarted() {
        for job in jobs.values where job.record.started == nil {
            guard case .success(let found) = resolveClass(spec: job.spec, folder: job.record.folder ?? "") else { continue }
            job.record.className = found?.name ?? "default"
            job.record.priority = job.spec.priority ?? found?.priority ?? 0
        }
        scheduler.rebuild(order: config.order) { [jobs] entry in
            guard let job = jobs[entry.unit.job] else { return }
            entry.priority = job.record.priority
            entry.className = job.record.className
        }
        admission.limits = Admission.Limits(config)
    }

    /// First matching class (docs/config.md); a job's `class=` picks one by name.
    private func resolveClass(spec: JobSpec, folder: String) -> Result<Config.JobClass?, JobFileError> {
        if let name = spec.className {
            guard let found = config.classes.first(where: { $0.name == name }) else {
                return .failure(JobFileError(line: nil, message: "unknown class '\(name)'"))
            }
            return .success(found)
        }
        let url = spec.downloads.first?.urls.first ?? ""
        let host = URLParts(url)?.host ?? ""
        let found = config.classes.first { jobClass in
            let match = jobClass.match
            if let wanted = match.folder, wanted != folder, !folder.hasPrefix(wanted + "/") { return false }
            if let pattern = match.url, !URLParts.glob(pattern, matches: url) { return false }
            if let pattern = match.host, !URLParts.glob(pattern, matches: host) { return false }
            return true
        }
        return .success(found)
    }

    func jobClass(of job: Job) -> Config.JobClass? {
        config.classes.first { $0.name == job.record.className }
    }

    /// Carries over what an earlier run recorded: chosen files, finished downloads, attempts.
    private func restore(_ job: Job, from previous: StatusRecord) {
        for index in job.downloads.indices where index < previous.downloads.count {
            let saved = previous.downloads[index]
            guard let file = saved.file else { continue }
            job.downloads[index].finalPath = file
            job.downloads[index].status.file = file
            let part = Agent.partPath(for: file)
            let finished = saved.state == .done || (!FileSystem.exists(part) && FileSystem.fileSize(file) != nil
                && (saved.state == .running || saved.state == .waiting))
            if finished, let size = FileSystem.fileSize(file) {
                var status = saved
                status.state = .done
                status.bytes = size
                status.error = nil
                if status.sha256 == nil { status.sha256 = try? Agent.sha256(ofFile: file) }
                job.downloads[index].status = status
                // A crash between the publishing rename and the record's removal left the record.
                Agent.discardPartial(part)
            }
        }
    }

    /// `.<file>.part` beside the final file; a final name over 200 bytes is shortened first
    /// (`FileName.shortened`), so that the part, its `.json` record and that record's temp file
    /// stay within NAME_MAX (255 bytes) even for a 255-byte final name.
    static func partPath(for finalPath: String) -> String {
        let name = FileName.shortened(FileSystem.baseName(of: finalPath), maxBytes: 200)
        return FileSystem.directoryName(of: finalPath) + "/." + name + ".part"
    }

    static func sha256(ofFile path: String) throws(SystemError) -> String {
        let file = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW)
        let digest = Digest(.sha256)
        try digest.update(from: file, length: Int64(try file.status().st_size))
        return digest.finalize()
    }

    /// Files a job that never queued (invalid, unsupported) in failed/.
    private func fileImmediately(_ workName: String, _ base: StatusRecord, _ failure: Failure) {
        var record = base
        record.state = .failed
        record.error = failure
        record.finished = Timestamp.now()
        record.folder = nil
        for index in record.downloads.indices {
            record.downloads[index].state = .failed
            record.downloads[index].error = failure
        }
        logger.warning("job failed: \(failure.message)", metadata: ["job": "\(record.job)", "kind": "\(failure.kind.rawValue)"])
        handledFailure = true
        do {
            announce(record, filedAt: try spool.file(workName, as: .failed, status: record))
            metrics?.jobsFiled["failed", default: 0] += 1
        } catch {
            logger.error("cannot file \(workName) in failed/: \(error)")
        }
    }

    /// Files a job whose downloads are all over, in done/ or failed/, and forgets it.
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
        let outcome: Spool.Outcome = failures.isEmpty ? .done : .failed
        if outcome == .failed { handledFailure = true }
        do {
            let filed = try spool.file(job.workName, as: outcome, status: record)
            logger.info("job \(record.state.rawValue)", metadata: ["job": "\(record.job)", "attempts": "\(record.attempts)"])
            announce(record, filedAt: filed)
            metrics?.jobsFiled[record.state.rawValue, default: 0] += 1
            metrics?.bytesDownloaded += record.downloads.filter { $0.state == .done }.reduce(0) { $0 + $1.bytes }
        } catch {
            logger.error("cannot file \(job.workName): \(error)")
        }
        jobs[job.id] = nil
        jobIDs[job.workName] = nil
        if jobs.isEmpty, let idle = config.hooks.onIdle {
            hooks.run(idle, event: "on_idle", environment: ["DROPFETCH_STATE": "idle"])
        }
    }

    /// Runs `hooks.on_done` or `hooks.on_failed` for a filed job (docs/config.md).
    private func announce(_ record: StatusRecord, filedAt path: String) {
        let done = record.state == .done
        guard let hook = done ? config.hooks.onDone : config.hooks.onFailed else { return }
        let files = record.downloads.filter { $0.state == .done }.compactMap(\.file)
        hooks.run(hook, event: done ? "on_done" : "on_failed", environment: [
            "DROPFETCH_JOB": record.job, "DROPFETCH_STATE": record.state.rawValue,
            "DROPFETCH_STATUS_FILE": FileSystem.directoryName(of: path) + "/"
                + Spool.statusName(forJob: FileSystem.baseName(of: path)),
            "DROPFETCH_FILES": files.joined(separator: "\n"),
        ])
    }

    /// Re-adopts this agent's work folder and any dead agent's, resuming from what is on disk.
    func recover() {
        spool.removeLeftovers(in: spool.work)
        let own = spool.ownJobs()
        var completed: [String] = []
        let adopted = spool.adoptOrphans(completed: &completed)
        for job in completed { logger.info("completed the filing of \(job) begun by a dead agent") }
        let names = own + adopted
        for workName in names where jobIDs[workName] == nil {
            crashPlan?.reach(.recovery)
            let previous = spool.readState(for: workName)
            let jobName = previous?.job ?? workName
            if let unfinished = spool.unfinishedFiling(of: workName, job: jobName) {
                do {
                    try spool.completeFiling(workName, to: unfinished.jobPath)
                    logger.info("completed the filing of \(jobName) begun by an earlier run")
                } catch {
                    logger.error("cannot complete the filing of \(workName): \(error)")
                }
                continue
            }
            logger.info("resuming \(jobName) from an earlier run")
            admit(workName: workName, jobName: jobName, folder: previous?.folder ?? "", previous: previous)
        }
    }

    /// A job file left the work folder behind the agent's back (hold, cancel, `mv`, `rm`): its
    /// transfers stop at once and it is forgotten. Partial data stays for a later resume, unless the
    /// job file is gone from the spool altogether (deleted), when it is removed too.
    func jobLeftWorkFolder(_ workName: String) {
        guard let id = jobIDs[workName], let job = jobs[id] else { return }
        // Our own filing, or a new job already claimed under the same name.
        if FileSystem.exists(spool.work + "/" + workName) { return }
        for (key, running) in transfers where running.entry.unit.job == id {
            multi.remove(running.transfer.easy)
            try? running.transfer.syncData()
            try? running.transfer.saveRecord()
            partsInUse.remove(running.transfer.request.partPath)
            admission.finished(host: running.entry.host, className: running.entry.className)
            transfers[key] = nil
        }
        scheduler.remove(job: id)
        jobs[id] = nil
        jobIDs[workName] = nil
        try? FileSystem.removeIfPresent(spool.work + "/" + Spool.stateName(forJob: workName))
        let held = spool.locate(job.record.job) != nil || spool.locate(workName) != nil
        if !held {
            for download in job.downloads where download.status.state != .done {
                if let final = download.finalPath { Agent.discardPartial(Agent.partPath(for: final)) }
            }
        }
        logger.info("job left the work folder, transfers stopped", metadata: [
            "job": "\(job.record.job)", "partial_data": "\(held ? "kept" : "removed")",
        ])
        applyRateLimits()
    }

    /// Rewrites `work/<agent>/<name>.state.json` of running jobs with their progress (about once a second).
    func refreshStateFiles() {
        for (_, running) in transfers {
            try? running.transfer.saveRecord()
            guard let job = jobs[running.entry.unit.job] else { continue }
            job.downloads[running.entry.unit.download].status.bytes = running.transfer.written
            job.downloads[running.entry.unit.download].status.size = running.transfer.total
        }
        let running = Set(transfers.values.map(\.entry.unit.job))
        for id in running {
            guard let job = jobs[id] else { continue }
            saveState(job)
        }
    }

    func saveState(_ job: Job) {
        do {
            try spool.writeState(job.snapshot(), for: job.workName)
        } catch {
            logger.error("cannot write the state of \(job.workName): \(error)")
        }
    }
}
