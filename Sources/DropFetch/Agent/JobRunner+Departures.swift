import Glibc

/// Jobs and transfers leaving the runner's hands other than by their end: a stop (their data kept
/// for the next start), a fenced agent's drop, a job file moved away behind the agent's back, and
/// the unstarted jobs a config reload takes back to requeue them under the new classes.
extension JobRunner {
    /// Aborts every transfer, keeping `.part` files and resume records for the next start.
    func stopTransfers() {
        for (transfer, unit) in Array(table.allTransfers) {
            if let group = table.group(key: transfer.easy.key) {
                // The pieces written count once synced; a restart resumes the others.
                stopSplit(group, transfer, countingConnections: false)
                try? transfer.part.checkpoint(pieces: group.plan.map)
                if let job = table.job(unit.job) {
                    carryOut(job.apply(.stopped(written: group.doneBytes), to: unit.download), job, unit.download)
                }
                continue
            }
            transferEnded(key: transfer.easy.key)
            multi.remove(transfer.easy)
            try? transfer.part.checkpoint()
            if let job = table.job(unit.job) {
                carryOut(job.apply(.stopped(written: transfer.written), to: unit.download), job, unit.download)
            }
        }
        admission.reset()
        // The meter holds its transfers until they are forgotten: these are.
        bandwidth.applyRateLimits()
    }

    /// Before the agent ends (a stop, the end of `run --once`): the records of parts with data,
    /// open or set aside, whose write found no descriptor (`Job.writeOwedRecords`), so that the
    /// next run resumes them.
    func writeOwedRecords() {
        // Another agent may own these jobs once the lease is broken (DESIGN.md §10 Fencing).
        guard !context.fence.isBroken else { return }
        for job in table.allJobs { job.writeOwedRecords() }
    }

    /// Drops every job and transfer without a step on disk (DESIGN.md §10 Fencing): the handles
    /// leave the multi handle, so that no byte more is received for them, and nothing is written,
    /// published, removed or filed; another agent may own these jobs now.
    func abandonAll() {
        var removed = Set<ObjectIdentifier>()
        for transfer in table.removeAll() where removed.insert(ObjectIdentifier(transfer)).inserted {
            multi.remove(transfer.easy)
        }
        hashing.removeAll()
        context.receiveBudget.forgetPaused()
        scheduler = Scheduler(order: config.order)
        admission.reset()
        // The meter holds its transfers until they are forgotten: these are (no handle is touched).
        bandwidth.applyRateLimits()
    }

    /// A job file left the work folder behind the agent's back (hold, cancel, `mv`, `rm`): its
    /// transfers stop at once and it is forgotten. Partial data stays for a later resume when the
    /// job is still in the spool (held, released); it goes when the job was cancelled or deleted.
    func jobLeftWorkFolder(_ workName: String) {
        // A job being filed leaves by its own move; one moved away meanwhile is seen by the filing.
        intake.departed(workName)
        guard let job = table.job(workName: workName), !table.isCommitting(job) else { return }
        // Our own filing, or a new job already claimed under the same name.
        if FileSystem.exists(FileSystem.join(spool.work, workName)) { return }
        for (transfer, unit) in table.transfers(of: job) {
            if let group = table.group(key: transfer.easy.key) {
                stopSplit(group, transfer, countingConnections: true)
                try? transfer.part.recordPieces(group.plan.map)
                job.apply(.left, to: unit.download)
                continue
            }
            transferEnded(key: transfer.easy.key)
            multi.remove(transfer.easy)
            try? transfer.part.saveRecord()
            admission.finished(host: transfer.request.host, className: job.record.className)
            job.apply(.left, to: unit.download)
        }
        scheduler.remove(job: job.id)
        table.remove(job)
        // `hold` took the state along first; what is left here is stale.
        try? FileSystem.removeIfPresent(spool.statePath(for: workName))
        let place = spool.whereIs(job: job.record.job, workName: workName, folder: job.record.folder ?? "")
        let keep = place == .hold || place == .inbox
        if keep, !context.fence.isBroken { job.writeOwedRecords() }
        if !keep {
            for (index, download) in job.downloads.enumerated() {
                // A reservation on its way deals with the part set aside (`PartReservation.release`).
                if download.earlier != nil, download.phase != .reserving { job.dropEarlierName(of: index, removing: true) }
                guard let part = download.part else { continue }
                if download.phase == .publishing { publisher.discard(part) } else { part.discard() }
            }
        }
        logger.info("job left the work folder, transfers stopped", metadata: [
            "job": "\(job.record.job)", "now_in": "\(place?.rawValue ?? "nowhere")",
            "partial_data": "\(keep ? "kept" : "removed")",
        ])
        if place == .failed { filer.filedByCancel(job) }
        bandwidth.applyRateLimits()
    }

    /// After a config reload: jobs that have not started take the new classes and priorities,
    /// and the queue is re-sorted (running and started jobs keep theirs and their folder).
    func requeueUnstarted() {
        // A kept root that the admin moved and the new config names in its new place: the job's
        // parts and the paths it reports (status file, DROPFETCH_FILES) take the new name.
        for job in table.allJobs where job.destination != nil {
            if let moved = names.movedRoot(of: job) { job.relabelDestination(moved) }
        }
        // A job whose output name is taken (or being taken) keeps its class and the destination
        // its `.part` lies in (`Job.destination`), and its admission place was counted under it.
        for job in table.allJobs where job.record.started == nil
            && !job.downloads.contains(where: { $0.part != nil || $0.earlier != nil || $0.phase == .reserving }) {
            guard case .success(let found) = config.resolveClass(spec: job.spec, folder: job.record.folder ?? "") else { continue }
            job.forgetDestination()
            job.handle(.reclassified(className: found?.name ?? "default", priority: job.spec.priority ?? found?.priority ?? 0))
        }
        // Unclaimed inbox jobs are read again under the new classes.
        intake.reindex()
        scheduler.rebuild(order: config.order) { [table] entry in
            guard let job = table.job(entry.unit.job) else { return }
            entry.priority = job.record.priority
            entry.className = job.record.className
        }
        schedule.configChanged()
    }
}
