import CCurl
import Glibc

extension Agent {
    /// Starts queued downloads while the limits allow (docs/architecture.md: a freed slot is refilled in
    /// the same loop turn).
    func startRunnable() {
        busyParts.removeAll()
        let now = MonotonicClock.now()
        while admission.hasRoom {
            guard let entry = scheduler.nextRunnable(now: now, canStart: { [admission] candidate in
                admission.admits(host: candidate.host, className: candidate.className)
            }) else { return }
            start(entry)
        }
    }

    private func start(_ entry: Scheduler.Entry) {
        guard let job = jobs[entry.unit.job] else { return }
        let index = entry.unit.download
        var download = job.downloads[index]
        let finalPath: String
        do throws(Failure) {
            if let chosen = download.finalPath {
                finalPath = chosen
            } else {
                finalPath = try chooseFinalPath(for: download, of: job)
            }
        } catch {
            return finish(job, index, failure: TransferFailure(failure: error, httpStatus: nil, retryAfter: nil,
                                                               bytes: 0, resumedFrom: 0))
        }
        let firstChoice = download.finalPath == nil
        download.finalPath = finalPath
        download.status.file = finalPath
        download.status.url = Redaction.url(download.currentURL)
        let newAttempt = download.mirror == 0 && download.restarts == 0
        if newAttempt { job.record.attempts += 1 }
        var request = TransferRequest(
            url: download.currentURL, partPath: Agent.partPath(for: finalPath),
            headers: download.spec.headers, checksum: download.spec.checksum,
            maxFileSize: config.limits.maxFileSize, connectTimeout: config.limits.connectTimeout,
            lowSpeed: config.limits.lowSpeed, protocols: config.protocols)
        request.durable = config.fsync
        request.maxRedirects = config.maxRedirects
        request.timeout = config.limits.timeout
        request.blockPrivateAddresses = config.blockPrivateAddresses
        request.minFreeSpace = config.limits.minFreeSpace
        request.fileMode = config.fileMode
        let transfer: Transfer
        do {
            transfer = try Transfer(request, crashPlan: crashPlan)
            try multi.add(transfer.easy)
        } catch is Transfer.PartInUse {
            // Another agent writes a file of the same name here: queue again for another name.
            busyParts.insert(request.partPath)
            if newAttempt { job.record.attempts -= 1 }
            job.downloads[index].finalPath = nil
            job.downloads[index].status.file = nil
            logger.debug("\(request.partPath) is in use by another agent", metadata: ["job": "\(job.record.job)"])
            return scheduler.enqueue(entry)
        } catch {
            knownFolders.removeAll()
            let kind: ErrorKind = (error as? SystemError)?.isNoSpace == true ? .noSpace : .internal
            job.downloads[index] = download
            return finish(job, index, failure: TransferFailure(failure: Failure(kind, "\(error)"), httpStatus: nil,
                                                               retryAfter: nil, bytes: 0, resumedFrom: 0))
        }
        transfers[transfer.easy.key] = (transfer, entry)
        admission.started(host: entry.host, className: entry.className)
        partsInUse.insert(request.partPath)
        download.status.state = .running
        download.status.resumedFrom = transfer.requestedOffset
        download.status.bytes = transfer.written
        download.status.error = nil
        download.startedAt = MonotonicClock.now()
        job.downloads[index] = download
        job.record.state = .running
        job.record.retryAt = nil
        if job.record.started == nil { job.record.started = Timestamp.now() }
        if firstChoice || transfer.requestedOffset > 0 { saveState(job) }
        applyRateLimits()
        logger.debug("started", metadata: ["job": "\(job.record.job)", "url": "\(download.status.url)",
                                           "from": "\(transfer.requestedOffset)"])
    }

    /// Shares the bandwidth limits out among the running transfers (CURLOPT_MAX_RECV_SPEED_LARGE):
    /// the global `rate_limit` and each class's divided evenly, a download's own limit on top.
    /// Called whenever a transfer starts or ends, so the sums hold.
    func applyRateLimits() {
        let classRates = Dictionary(config.classes.compactMap { c in c.rateLimit.map { (c.name, $0) } }) { a, _ in a }
        let anyLimit = config.limits.rateLimit > 0 || !classRates.isEmpty
            || transfers.values.contains { jobs[$0.entry.unit.job]?.downloads[$0.entry.unit.download].spec.maxDownloadLimit != nil }
        guard anyLimit || rateLimitsApplied else { return }
        rateLimitsApplied = anyLimit
        for running in transfers.values {
            guard let job = jobs[running.entry.unit.job] else { continue }
            var limits: [Int64] = []
            if let own = job.downloads[running.entry.unit.download].spec.maxDownloadLimit, own > 0 { limits.append(own) }
            if let rate = classRates[running.entry.className], rate > 0 {
                limits.append(max(1, rate / Int64(max(1, admission.active(inClass: running.entry.className)))))
            }
            if config.limits.rateLimit > 0 {
                limits.append(max(1, config.limits.rateLimit / Int64(transfers.count)))
            }
            try? running.transfer.easy.set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: limits.min() ?? 0)
        }
    }

    /// Picks the final name in the destination under `on_conflict`, skipping names in use by others.
    private func chooseFinalPath(for download: Job.Download, of job: Job) throws(Failure) -> String {
        let folder = destination(of: job) + (download.spec.dir.map { "/" + $0 } ?? "")
        if !knownFolders.contains(folder) {
            do {
                try FileSystem.makeDirectories(folder)
            } catch {
                throw Failure(error.isNoSpace ? .noSpace : .internal, "cannot create \(folder): \(error)")
            }
            knownFolders.insert(folder)
        }
        let name = download.spec.out ?? FileName.fromURL(download.spec.urls[0])
        for candidate in Agent.nameVariants(name) {
            let path = folder + "/" + candidate
            if partsInUse.contains(Agent.partPath(for: path)) || busyParts.contains(Agent.partPath(for: path)) { continue }
            if FileSystem.exists(path) {
                switch config.onConflict {
                case .fail: throw Failure(.exists, "\(path) already exists (on_conflict: fail)")
                case .overwrite: return path
                case .rename: continue
                }
            }
            return path
        }
        throw Failure(.exists, "no free name for \(name) in \(folder)")
    }

    func destination(of job: Job) -> String {
        jobClass(of: job)?.destination.map(Agent.absolute) ?? destinationRoot
    }

    /// `x.iso`, `x.1.iso`, `x.2.iso`, …; the stem is cut so that a variant stays within
    /// `FileName.maxBytes` (NAME_MAX) when `name` is already that long.
    static func nameVariants(_ name: String) -> some Sequence<String> {
        let dot = name.dropFirst().firstIndex(of: ".")
        var stem = dot.map { String(name[..<$0]) } ?? name
        var suffix = dot.map { String(name[$0...]) } ?? ""
        if suffix.utf8.count > FileName.maxBytes / 2 {
            stem = name
            suffix = ""
        }
        return (0..<10_000).lazy.map { number in
            guard number > 0 else { return name }
            let marker = ".\(number)"
            let room = FileName.maxBytes - marker.utf8.count - suffix.utf8.count
            return FileName.prefix(stem, maxBytes: room) + marker + suffix
        }
    }

    /// Handles a transfer libcurl reports as done.
    func complete(key: Int, result: CURLcode) {
        guard let (transfer, running) = transfers.removeValue(forKey: key) else { return }
        let unit = running.unit
        multi.remove(transfer.easy)
        partsInUse.remove(transfer.request.partPath)
        admission.finished(host: running.host, className: running.className)
        applyRateLimits()
        guard let job = jobs[unit.job] else { return }
        let index = unit.download
        if let started = job.downloads[index].startedAt {
            job.downloads[index].status.seconds += Double(MonotonicClock.now() - started) / 1000
            job.downloads[index].startedAt = nil
        }
        switch transfer.finish(result) {
        case .completed(let result):
            publish(transfer, result, job, index)
        case .restart(let reason):
            transfer.discardRecord()
            try? FileSystem.removeIfPresent(transfer.request.partPath)
            job.downloads[index].restarts += 1
            if job.downloads[index].restarts > 3 {
                return finish(job, index, failure: TransferFailure(failure: Failure(.network, reason), httpStatus: nil,
                                                                   retryAfter: nil, bytes: 0, resumedFrom: 0))
            }
            logger.info("partial data unusable, starting over: \(reason)", metadata: ["job": "\(job.record.job)"])
            job.downloads[index].status.state = .queued
            scheduler.enqueue(entry(for: job, index))
        case .failed(let failure):
            // The partial data may be resumed by the retry: describe it now if that waited.
            if failure.bytes > 0 { try? transfer.saveRecord() }
            finish(job, index, failure: failure)
        }
    }

    /// Makes a complete `.part` durable and gives it its final name (fsync → rename → fsync folder).
    private func publish(_ transfer: Transfer, _ result: TransferResult, _ job: Job, _ index: Int) {
        let part = transfer.request.partPath
        var target = job.downloads[index].finalPath ?? part
        if config.contentDisposition, job.downloads[index].spec.out == nil,
           let header = result.contentDisposition, let name = FileName.fromContentDisposition(header) {
            target = FileSystem.directoryName(of: target) + "/" + name
        }
        do throws(SystemError) {
            try transfer.syncData()
            crashPlan?.reach(.dataComplete)
            switch config.onConflict {
            case .overwrite:
                try FileSystem.rename(part, to: target)
            case .fail:
                try FileSystem.renameNoReplace(part, to: target)
            case .rename:
                var placed = false
                let folder = FileSystem.directoryName(of: target)
                for candidate in Agent.nameVariants(FileSystem.baseName(of: target)) {
                    target = folder + "/" + candidate
                    do {
                        try FileSystem.renameNoReplace(part, to: target)
                        placed = true
                        break
                    } catch where error.code == EEXIST {
                        continue
                    }
                }
                if !placed { throw SystemError(code: EEXIST, operation: "rename", path: target) }
            }
            transfer.discardRecord()
            if config.fsync { try FileSystem.syncDirectory(FileSystem.directoryName(of: target)) }
        } catch {
            let kind: ErrorKind = error.code == EEXIST ? .exists : (error.isNoSpace ? .noSpace : .internal)
            return finish(job, index, failure: TransferFailure(failure: Failure(kind, error.description), httpStatus: result.httpStatus,
                                                               retryAfter: nil, bytes: result.bytes, resumedFrom: result.resumedFrom))
        }
        var status = job.downloads[index].status
        status.state = .done
        status.file = target
        status.bytes = result.bytes
        status.size = nil
        status.httpStatus = result.httpStatus
        status.resumedFrom = result.resumedFrom
        status.sha256 = result.sha256
        status.error = nil
        job.downloads[index].status = status
        job.downloads[index].finalPath = target
        crashPlan?.reach(.published)
        if job.isFinished { fileJob(job) } else { saveState(job) }
    }

    /// A failed attempt: the next mirror at once, else a retry after backoff, else the end.
    func finish(_ job: Job, _ index: Int, failure: TransferFailure) {
        var download = job.downloads[index]
        download.status.bytes = failure.bytes
        download.status.httpStatus = failure.httpStatus
        download.status.resumedFrom = failure.resumedFrom
        download.status.error = failure.failure
        download.restarts = 0
        let kind = failure.failure.kind
        let policy = jobClass(of: job)?.retry ?? config.retry
        let retryable: Bool = switch kind {
        case .network, .timeout, .noSpace, .checksumMismatch: true
        case .httpStatus: failure.httpStatus.map(policy.onHTTP.contains) ?? false
        default: false
        }
        if let final = download.finalPath {
            let part = Agent.partPath(for: final)
            let dataIsUseful = kind == .network || kind == .timeout || kind == .noSpace || kind == .httpStatus
            if !partsInUse.contains(part), !dataIsUseful || (FileSystem.fileSize(part) ?? 0) == 0 {
                Agent.discardPartial(part)
                download.status.bytes = 0
            }
        }
        logger.warning("attempt failed: \(failure.failure)", metadata: [
            "job": "\(job.record.job)", "url": "\(Redaction.url(download.currentURL))",
        ])
        if kind != .exists, kind != .noSpace, download.mirror + 1 < download.spec.urls.count {
            logger.info("trying the next mirror", metadata: ["job": "\(job.record.job)"])
            download.mirror += 1
            download.status.state = .queued
            job.downloads[index] = download
            scheduler.enqueue(entry(for: job, index))
            return
        }
        download.mirror = 0
        // A full disk is waited out (backing off), however many attempts that takes.
        if retryable, !failure.isFinal, job.record.attempts < policy.attempts || kind == .noSpace {
            let delay = Backoff.delay(attempt: job.record.attempts, policy: policy, retryAfter: failure.retryAfter,
                                      jitter: Double.random(in: 0..<1))
            download.status.state = .waiting
            job.downloads[index] = download
            let wallDue = Int64(time(nil)) + Int64((delay.milliseconds + 999) / 1000)
            job.record.retryAt = Timestamp.format(seconds: wallDue)
            scheduler.enqueue(entry(for: job, index), due: MonotonicClock.now() + Int64(delay.milliseconds))
            logger.info("retry in \(delay.milliseconds) ms", metadata: ["job": "\(job.record.job)"])
            metrics?.retries += 1
            saveState(job)
            return
        }
        download.status.state = .failed
        if let final = download.finalPath, kind != .network, kind != .timeout, kind != .noSpace {
            Agent.discardPartial(Agent.partPath(for: final))
        }
        job.downloads[index] = download
        if job.isFinished { fileJob(job) } else { saveState(job) }
    }

    /// Removes a `.part` file and its resume record.
    static func discardPartial(_ part: String) {
        try? FileSystem.removeIfPresent(part)
        try? FileSystem.removeIfPresent(ResumeRecord.path(forPart: part))
    }

    /// Aborts every transfer, keeping `.part` files and resume records for the next start.
    func stopTransfers() {
        for (_, running) in transfers {
            multi.remove(running.transfer.easy)
            try? running.transfer.syncData()
            try? running.transfer.saveRecord()
            if let job = jobs[running.entry.unit.job] {
                job.downloads[running.entry.unit.download].status.state = .queued
                job.downloads[running.entry.unit.download].status.bytes = running.transfer.written
            }
        }
        let running = Set(transfers.values.map(\.entry.unit.job))
        transfers.removeAll()
        partsInUse.removeAll()
        admission.reset()
        for id in running { if let job = jobs[id] { saveState(job) } }
    }
}
