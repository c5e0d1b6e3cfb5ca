import CCurl

/// Segmented downloads (issue 26) on the run loop: a download starts on one connection and is
/// split once its first response allows it (size known, ranges, a strong validator, twice
/// `min_size` left); a resume whose record holds pieces with holes starts split at once. Each
/// extra connection takes a place in `admission` (one that finds none is not opened), a segment
/// that ends hands its connection to the largest piece left, and a segment answer that shows
/// another file stops them all for a restart on one connection. The lifecycle sees one download
/// under its first transfer's key; only the connections count changes while it runs.
extension JobRunner {
    /// The `split` settings of download `index` of `job`: its class's, applied to its job file's options.
    func splitSettings(_ job: Job, _ index: Int) -> Config.Split {
        config.split(forClass: job.record.className).applied(to: job.spec.downloads[index])
    }

    /// Whether download `index` may open more connections at all: more than one allowed, HTTP,
    /// and no segment of it was refused in this run.
    func mayBeSplit(_ job: Job, _ index: Int, _ request: TransferRequest) -> Bool {
        guard job.machine.downloads[index].maySplit, !request.protocolKind.isFileBased else { return false }
        let scheme = request.scheme.isEmpty ? URLParts(request.url)?.scheme ?? "" : request.scheme
        return (scheme == "http" || scheme == "https") && splitSettings(job, index).connections > 1
    }

    /// The pieces to resume split: a record of a split download with a hole before its last piece
    /// (a one-connection resume would drop what lies past the hole), its validator and size, and
    /// a download that may still be split; nil otherwise (the usual one-connection resume).
    func piecesToResume(_ part: PartFile, _ request: TransferRequest, _ job: Job, _ index: Int) -> (map: PieceMap, validator: String)? {
        let record = part.record
        guard record.pieces != nil, let validator = record.validator, mayBeSplit(job, index, request),
              let size = try? part.file.status().st_size,
              let map = record.trustedPieces(of: Int64(size)), !map.isComplete, map.doneBytes > map.prefix else { return nil }
        return (map, validator)
    }

    /// Starts a download whose `.part` holds pieces with holes on as many connections as it may
    /// open, each asking only for a missing range.
    func beginSegmented(_ entry: Scheduler.Entry, _ job: Job, _ request: TransferRequest, _ part: PartFile,
                        _ resumed: (map: PieceMap, validator: String), recordsState: Bool, newAttempt: Bool) {
        let index = entry.unit.download
        let settings = splitSettings(job, index)
        let group = SegmentedDownload(request: request, part: part, map: resumed.map, validator: resumed.validator,
                                      connections: settings.connections, minSize: settings.minSize, crashPlan: crashPlan)
        let opened: [Transfer]
        do {
            // The record names only the pieces trusted now, before a byte of a segment lands.
            try part.recordPieces(resumed.map)
            try group.startDigest()
            opened = try group.fill(limit: max(1, admission.room(host: entry.host, className: entry.className)))
        } catch {
            return endAttempt(job, index, JobRunner.startFailure(error, bytes: resumed.map.doneBytes))
        }
        guard let lead = opened.first else { return }
        table.started(lead, for: entry.unit)
        table.split(key: lead.easy.key, into: group)
        for transfer in opened { openConnection(transfer, of: lead.easy.key, host: entry.host, className: entry.className) }
        job.apply(.transferStarted(key: lead.easy.key, url: Redaction.url(job.download(index).currentURL),
                                   offset: resumed.map.prefix, written: resumed.map.doneBytes,
                                   now: clock.now(), newAttempt: newAttempt), to: index)
        job.apply(.connections(group.liveConnections), to: index)
        if recordsState { filer.saveState(job) }
        bandwidth.applyRateLimits()
        JobLog.started(job, index, from: resumed.map.prefix, logger: logger)
        logger.info("resuming the missing pieces", metadata: [
            "job": "\(job.record.job)", "pieces_missing": "\(resumed.map.missing.count)",
            "bytes_missing": "\(resumed.map.total - resumed.map.doneBytes)", "connections": "\(group.liveConnections)",
        ])
        logCap(job, connections: group.liveConnections, asked: settings,
               room: max(1, admission.room(host: entry.host, className: entry.className)) + opened.count, host: entry.host)
        if group.liveConnections < settings.connections { growable.insert(lead.easy.key) }
    }

    /// After each curl_multi_perform(3): splits the downloads whose first response was accepted
    /// in it, if that response allows it.
    func openSegments() {
        guard !splitCandidates.isEmpty else { return }
        let keys = splitCandidates
        splitCandidates.removeAll()
        for key in keys { split(key) }
    }

    private func split(_ key: Int) {
        guard let transfer = table.transfer(key: key), table.group(key: key) == nil, transfer.stream == nil,
              case .writing = transfer.state, let (lead, unit) = table.transfers(ofKey: key), lead === transfer,
              let job = table.job(unit.job), job.phase(of: unit.download) == .running(key: key) else { return }
        let index = unit.download
        let settings = splitSettings(job, index)
        let facts = transfer.splitFacts
        guard SegmentCheck.maySplit(facts, written: transfer.written, connections: settings.connections, minSize: settings.minSize),
              let validator = facts.validator, let total = facts.total else { return }
        let host = transfer.request.host
        let room = admission.room(host: host, className: job.record.className)
        guard room > 0 else {
            // Split when a place frees up (`growSplits`).
            growable.insert(key)
            return logger.debug("not split yet: no connection free for the host or class", metadata: ["job": "\(job.record.job)"])
        }
        let map = PieceMap(total: total, done: transfer.written > 0 ? [PieceMap.Range(0, transfer.written)] : [])
        let group = SegmentedDownload(request: transfer.request, part: transfer.part, map: map, validator: validator,
                                      connections: settings.connections, minSize: settings.minSize, crashPlan: crashPlan)
        let opened: [Transfer]
        do {
            // Before a segment's byte lands the record has a piece map: a resume never takes a hole for data.
            try transfer.part.recordPieces(map)
            try group.startDigest()
            group.adopt(transfer, at: transfer.written)
            table.split(key: key, into: group)
            opened = try group.fill(limit: room)
        } catch {
            // The first connection goes on alone.
            if let error = error as? SystemError, DescriptorLimit.isShortage(error) {
                // Split a second later, when a descriptor may be free (`growSplits`).
                growable.insert(key)
                splitWaitsUntil[key] = clock.now() + DescriptorLimit.retryDelay
                logger.debug("not split yet: no descriptor free", metadata: ["job": "\(job.record.job)"])
                return noteDescriptorShortage("cannot split the download: \(error)")
            }
            return logger.warning("cannot split the download: \(error)", metadata: ["job": "\(job.record.job)"])
        }
        for segment in opened { openConnection(segment, of: key, host: host, className: job.record.className) }
        job.apply(.connections(group.liveConnections), to: index)
        bandwidth.applyRateLimits()
        logger.info("download split", metadata: [
            "job": "\(job.record.job)", "connections": "\(group.liveConnections)", "size": "\(total)",
            "from": "\(transfer.written)",
        ])
        logCap(job, connections: group.liveConnections, asked: settings, room: 1 + room, host: host)
        if group.liveConnections < settings.connections { growable.insert(key) }
    }

    /// Gives the places left after this turn's starts to running downloads that may open more
    /// connections than they have (issue 36: a split download gains connections when another
    /// job's end frees one): a download left unsplit for want of room is split now (one whose
    /// split found no descriptor, a second later: `splitWaitsUntil`), a split one opens segments
    /// on its largest pieces left. Queued downloads take their places first (`startRunnable` runs
    /// before).
    func growSplits() {
        guard !growable.isEmpty, admission.hasRoom else { return }
        let now = clock.now()
        for key in growable.sorted() {
            guard let (lead, unit) = table.transfers(ofKey: key), let job = table.job(unit.job),
                  job.phase(of: unit.download) == .running(key: key) else {
                growable.remove(key)
                splitWaitsUntil[key] = nil
                continue
            }
            if let until = splitWaitsUntil[key] {
                guard now >= until else { continue }
                splitWaitsUntil[key] = nil
            }
            guard admission.room(host: lead.request.host, className: job.record.className) > 0 else { continue }
            growable.remove(key)
            if let group = table.group(key: key) {
                grow(group, under: key, job, unit.download, host: lead.request.host)
            } else {
                split(key)
            }
        }
    }

    /// Opens more segments of the split download under `key`, as many as there is room for and
    /// pieces of at least `min_size` left; kept in `growable` while it has fewer than it asked.
    private func grow(_ group: SegmentedDownload, under key: Int, _ job: Job, _ index: Int, host: String) {
        let settings = splitSettings(job, index)
        guard group.liveConnections < settings.connections, !group.isComplete else { return }
        let before = group.liveConnections
        let opened: [Transfer]
        do {
            opened = try group.fill(limit: admission.room(host: host, className: job.record.className))
        } catch {
            return logger.warning("cannot open another segment: \(error)", metadata: ["job": "\(job.record.job)"])
        }
        // No piece left big enough to share: it will not grow again.
        guard !opened.isEmpty else { return }
        for segment in opened { openConnection(segment, of: key, host: host, className: job.record.className) }
        job.apply(.connections(group.liveConnections), to: index)
        bandwidth.applyRateLimits()
        logger.info("split download gained connections", metadata: [
            "job": "\(job.record.job)", "connections": "\(group.liveConnections)", "before": "\(before)",
        ])
        if group.liveConnections < settings.connections { growable.insert(key) }
    }

    /// Logs why a split download runs fewer connections than it asked: the tightest limit, else the piece size.
    func logCap(_ job: Job, connections: Int, asked settings: Config.Split, room: Int, host: String) {
        guard connections < settings.connections else { return }
        let cause = room < settings.connections
            ? admission.tightestLimit(host: host, className: job.record.className)
            : "split.min_size \(settings.minSize) (no more pieces that big)"
        logger.info("split capped", metadata: [
            "job": "\(job.record.job)", "connections": "\(connections)", "asked": "\(settings.connections)",
            "cause": "\(cause)",
        ])
    }

    /// Starts one extra connection of the split download under `key`, counted by `admission`.
    private func openConnection(_ transfer: Transfer, of key: Int, host: String, className: String) {
        transfer.receiveBudget = context.receiveBudget
        bandwidth.prepareConnection(transfer, of: key)
        do {
            try multi.add(transfer.easy)
        } catch {
            logger.warning("cannot start a segment: \(error)")
            return
        }
        admission.started(host: host, className: className)
        if transfer.easy.key != key { table.segmentStarted(transfer.easy.key, of: key) }
    }

    /// Connection `key` of the split download under `download` ended: its piece is done or given
    /// back, its connection goes to the largest piece left; the download ends when every piece is
    /// written, every connection failed, or a segment's answer showed another file.
    func segmentEnded(_ key: Int, _ result: CURLcode, of download: Int, _ group: SegmentedDownload) {
        guard let transfer = group.running[key]?.transfer, let (lead, unit) = table.transfers(ofKey: download),
              let job = table.job(unit.job) else { return }
        multi.remove(transfer.easy)
        table.segmentEnded(key)
        let host = transfer.request.host
        admission.finished(host: host, className: job.record.className)
        let outcome = transfer.finish(result)
        if case .failed(let failure) = outcome {
            logger.debug("segment failed: \(failure.failure.message)", metadata: ["job": "\(job.record.job)"])
        }
        let next: [Transfer]
        do {
            next = try group.ended(key: key, outcome, limit: admission.room(host: host, className: job.record.className))
        } catch {
            next = []
        }
        for segment in next { openConnection(segment, of: download, host: host, className: job.record.className) }
        // A piece left unshared for want of room is shared when a place frees up.
        if group.liveConnections < splitSettings(job, unit.download).connections { growable.insert(download) }
        if let reason = group.restartReason {
            restartSplit(group, lead, unit, job, reason: reason)
        } else if group.isComplete, group.running.isEmpty {
            completeSplit(group, lead, unit)
        } else if group.isStuck {
            failSplit(group, lead, unit, job)
        } else {
            job.apply(.connections(group.liveConnections), to: unit.download)
        }
        bandwidth.applyRateLimits()
    }

    /// Every piece is written: the digests are finished on their worker, then the file is published.
    private func completeSplit(_ group: SegmentedDownload, _ lead: Transfer, _ unit: Scheduler.Unit) {
        transferEnded(key: lead.easy.key)
        if let descriptor = group.digestPending() {
            return hashing.append(PendingDigest(descriptor: descriptor, transfer: lead, unit: unit, result: CURLE_OK,
                                                group: group))
        }
        finishSplit(group, lead, unit)
    }

    /// A complete split download with its digests: published, or failed on its checksum.
    func finishSplit(_ group: SegmentedDownload, _ lead: Transfer, _ unit: Scheduler.Unit) {
        guard let job = table.job(unit.job) else { return }
        let index = unit.download
        let now = clock.now()
        job.apply(.transferEnded(now: now), to: index)
        if let completedAt = group.completedAt {
            logger.debug("split download hashed", metadata: ["job": "\(job.record.job)", "hash_wait_ms": "\(now - completedAt)"])
        }
        let status = lead.easy.info(long: CURLINFO_RESPONSE_CODE)
        switch group.result(httpStatus: status == 0 ? nil : status, resumedFrom: job.machine.downloads[index].status.resumedFrom,
                            contentDisposition: lead.response(header: .contentDisposition)) {
        case .completed(let result):
            publisher.publish(group.part, result, job, index)
        case .failed(let failure):
            // Pieces failing `checksum=` refuse the split: the next attempt runs on one connection.
            if failure.failure.kind == .checksumMismatch { job.apply(.splitRefused, to: index) }
            endAttempt(job, index, failure)
        case .restart, .redirect:
            break
        }
    }

    /// Every connection failed with pieces still missing: the attempt fails; the pieces written
    /// are recorded, so that the next one asks only for the rest.
    private func failSplit(_ group: SegmentedDownload, _ lead: Transfer, _ unit: Scheduler.Unit, _ job: Job) {
        transferEnded(key: lead.easy.key)
        job.apply(.transferEnded(now: clock.now()), to: unit.download)
        try? group.part.recordPieces(group.plan.map)
        var failure = group.lastFailure ?? TransferFailure(failure: Failure(.network, "every segment failed"), httpStatus: nil,
                                                           retryAfter: nil, bytes: 0, resumedFrom: 0)
        failure.bytes = group.doneBytes
        endAttempt(job, unit.download, failure)
    }

    /// A segment's answer was not its range of the same file: every connection stops, the data
    /// is cut to nothing (no validator vouches for it any more) and the download starts over on
    /// one connection.
    private func restartSplit(_ group: SegmentedDownload, _ lead: Transfer, _ unit: Scheduler.Unit, _ job: Job, reason: String) {
        stopSplit(group, lead, countingConnections: true)
        job.apply(.transferEnded(now: clock.now()), to: unit.download)
        try? group.part.truncate(to: 0)
        try? group.part.recordPieces(PieceMap(total: group.total))
        logger.info("a segment's answer was refused, starting over on one connection: \(reason)",
                    metadata: ["job": "\(job.record.job)"])
        carryOut(job.apply(.segmentsRefused(reason: reason), to: unit.download), job, unit.download)
    }

    /// Ends every connection of a split download and forgets it; `countingConnections` gives
    /// their places back to `admission` (a shutdown resets it whole).
    func stopSplit(_ group: SegmentedDownload, _ lead: Transfer, countingConnections: Bool) {
        let className = table.transfers(ofKey: lead.easy.key).flatMap { table.job($0.unit.job)?.record.className } ?? "default"
        for transfer in group.stopAll() {
            multi.remove(transfer.easy)
            table.segmentEnded(transfer.easy.key)
            if countingConnections {
                admission.finished(host: transfer.request.host, className: className)
            }
        }
        transferEnded(key: lead.easy.key)
    }
}
