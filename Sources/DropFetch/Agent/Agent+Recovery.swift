import Glibc

extension Agent {
    /// Adopts this agent's work folder and any dead agent's (docs/spool.md), resuming each job from
    /// what is on disk; runs at start and on every rescan.
    func recover() {
        spool.removeLeftovers(in: spool.work)
        var completed: [String] = []
        let adopted = spool.adoptOrphans(completed: &completed)
        for job in completed { logger.info("completed the filing of \(job) begun by a dead agent") }
        for workName in Set(spool.ownJobs() + adopted).sorted() where table.job(workName: workName) == nil {
            crashPlan?.reach(.recovery)
            let previous = spool.readState(for: workName)
            let jobName = previous?.job ?? workName
            if spool.completeInterruptedMove(of: workName, folder: previous?.folder ?? "", job: jobName) {
                logger.info("completed an interrupted move of \(jobName)")
                if !FileSystem.exists(spool.work + "/" + workName) { continue }
            }
            if let unfinished = spool.unfinishedFiling(of: workName, job: jobName) {
                do {
                    let claim = (try? FileSystem.lstatus(spool.work + "/" + workName)).map { UInt64($0.st_ino) } ?? 0
                    try spool.completeFiling(workName, to: unfinished.jobPath)
                    spool.removeResumeRecords(filedAt: unfinished.jobPath, owner: PartOwner(job: jobName, claim: claim))
                    logger.info("completed the filing of \(jobName) begun by an earlier run")
                } catch {
                    logger.error("cannot complete the filing of \(workName): \(error)")
                }
                continue
            }
            logger.info("resuming \(jobName) from an earlier run")
            let arrival = (try? FileSystem.lstatus(spool.work + "/" + workName)).map {
                Int64($0.st_mtim.tv_sec) * 1_000_000_000 + Int64($0.st_mtim.tv_nsec)
            } ?? 0
            admit(workName: workName, jobName: jobName, folder: previous?.folder ?? "", previous: previous,
                  arrival: previous.flatMap { Timestamp.parse($0.submitted) }.map { $0 * 1_000_000_000 } ?? arrival)
        }
    }

    /// Carries over what an earlier run recorded: finished downloads and attempts. Partial data
    /// is found again through its record when the download starts (`reservePart`).
    func restore(_ job: Job, from previous: StatusRecord) {
        for index in job.downloads.indices where index < previous.downloads.count {
            let saved = previous.downloads[index]
            job.downloads[index].attempt = previous.attempts
            // An attempt interrupted by a hold, a shutdown or a crash goes on without costing one.
            job.downloads[index].beginsAttempt = previous.attempts == 0 || saved.state == .waiting
            job.downloads[index].status.seconds = saved.seconds
            if saved.state == .done, saved.file != nil {
                job.downloads[index].status = saved
                job.downloads[index].phase = .finished
            }
        }
    }

    /// A job file left the work folder behind the agent's back (hold, cancel, `mv`, `rm`): its
    /// transfers stop at once and it is forgotten. Partial data stays for a later resume when the
    /// job is still in the spool (held, released); it goes when the job was cancelled or deleted.
    func jobLeftWorkFolder(_ workName: String) {
        guard let job = table.job(workName: workName) else { return }
        // Our own filing, or a new job already claimed under the same name.
        if FileSystem.exists(spool.work + "/" + workName) { return }
        for (transfer, unit) in table.transfers(of: job) {
            _ = table.ended(key: transfer.easy.key)
            multi.remove(transfer.easy)
            try? transfer.part.checkpoint()
            admission.finished(host: URLParts(transfer.request.url)?.host ?? "", className: job.record.className)
            job.downloads[unit.download].phase = .queued
        }
        scheduler.remove(job: job.id)
        table.remove(job)
        // `hold` took the state along first; what is left here is stale.
        try? FileSystem.removeIfPresent(spool.work + "/" + Spool.stateName(forJob: workName))
        let place = spool.whereIs(job: job.record.job, workName: workName, folder: job.record.folder ?? "")
        let keep = place == .hold || place == .inbox
        if !keep {
            for download in job.downloads { download.part?.discard() }
        }
        logger.info("job left the work folder, transfers stopped", metadata: [
            "job": "\(job.record.job)", "now_in": "\(place?.rawValue ?? "nowhere")",
            "partial_data": "\(keep ? "kept" : "removed")",
        ])
        applyRateLimits()
    }
}
