import CCurl
import Glibc

/// Runs the downloads: the run queue and its limits, one Transfer per running download, and what
/// follows each attempt (publish, next mirror, retry, failure). The one place transfers start and end.
final class JobRunner: AgentPart {
    let context: AgentContext
    var scheduler: Scheduler
    var admission: Admission
    /// When the state files of running jobs were last refreshed (monotonic ms).
    var lastStateRefresh: Int64 = 0
    unowned var intake: JobIntake!
    unowned var filer: JobFiler!
    unowned var names: OutputNames!
    unowned var bandwidth: BandwidthControl!
    unowned var publisher: JobPublisher!
    unowned var schedule: ScheduleGate!
    /// Downloads (by their transfer's key) whose first response was accepted in this loop turn:
    /// `openSegments` looks whether they may be split (JobRunner+Segments.swift).
    var splitCandidates: [Int] = []
    /// Running downloads (by their first transfer's key) that may open more connections than they
    /// have once a place frees up (`growSplits`).
    var growable: Set<Int> = []
    /// Downloads in `growable` whose split found no descriptor (for its record's temp file or its
    /// digest's reader): the loop time (ms) before which `growSplits` does not try again, so that
    /// a shortage does not make every loop turn rewrite the record and fail again.
    var splitWaitsUntil: [Int: Int64] = [:]
    /// Every agent's index of done URLs, read on before each duplicate check (JobRunner+Duplicates.swift).
    let doneURLs = DoneIndex.Lookup()
    /// The finish steps pending when a reservation found the agent short of descriptors: until
    /// enough of them have run (closing their parts), nothing starts (`holdsForDescriptors`).
    private var descriptorShortage: Int?
    /// Whether the shortage was logged: once a run.
    private var shortageLogged = false

    init(context: AgentContext) {
        self.context = context
        scheduler = Scheduler(order: context.config.order)
        admission = Admission(limits: Admission.Limits(context.config))
    }

    /// Starts queued downloads while the limits allow (docs/architecture.md: a freed slot is
    /// refilled in the same loop turn); an unclaimed inbox job chosen here is claimed first.
    /// Starting costs file creations; after `budget` nanoseconds the rest start next turn.
    func startRunnable(budget: Int64 = 2_000_000) {
        let now = clock.now()
        let deadline = clock.nanoseconds() + budget
        startsCutShort = false
        if holdsForDescriptors() { return }
        while admission.hasRoom {
            guard let entry = scheduler.nextRunnable(now: now, admission: admission) else { return }
            if schedule.holdsBack(entry) { continue }
            // The exchange's answer wakes the loop, whose next turn starts it or holds it back.
            if schedule.awaitsLedger(className: entry.className) { return scheduler.enqueue(entry) }
            if entry.unit.download == Scheduler.Unit.wholeJob {
                // A rescan waits for the claims in flight (Agent.housekeeping); a lapsed lease is
                // taken again first, and its renewal wakes the loop (WorkLease.readyToAct).
                guard !intake.holdsClaims, context.lease?.readyToAct() ?? true else { return scheduler.enqueue(entry) }
                intake.claimCandidate(entry)
            } else {
                start(entry)
            }
            if clock.nanoseconds() >= deadline {
                startsCutShort = admission.hasRoom
                return
            }
        }
    }

    /// The last `startRunnable` ran out of time with room left: the loop should not sleep.
    private(set) var startsCutShort = false

    /// Whether starts wait for descriptors. A finish holds its `.part` open until its step runs,
    /// and with `fsync: true` on a disk slower than the network the finishes fall behind: under a
    /// low hard limit the agent would run out (P2 at `ulimit -n 1024` failed half its jobs with
    /// EMFILE). The hold ends when a quarter of the reserve's worth of the finishes pending at the
    /// shortage have run (half of them when fewer), or none is left: the next starts then take the
    /// descriptors they freed, until a part numbered past the floor shows the shortage again. Each
    /// finish batch back wakes the loop to look.
    private func holdsForDescriptors() -> Bool {
        guard let pendingAtShortage = descriptorShortage else { return false }
        let pending = context.pendingFinishes
        let freed = max(1, min(pendingAtShortage / 2, context.descriptorReserve / 4))
        if pending == 0 || pending <= pendingAtShortage - freed {
            descriptorShortage = nil
            return false
        }
        return true
    }

    /// A part numbered from `context.descriptorFloor` on shows the agent short of descriptors;
    /// returns whether it did.
    @discardableResult
    func noteDescriptor(of part: PartFile) -> Bool {
        guard part.file.rawValue >= context.descriptorFloor else { return false }
        noteDescriptorShortage("descriptor \(part.file.rawValue) taken for a part")
        return true
    }

    /// A download, claim or filing found the agent short of descriptors: starts wait
    /// (`holdsForDescriptors`).
    func noteDescriptorShortage(_ cause: String) {
        descriptorShortage = max(descriptorShortage ?? 0, context.pendingFinishes)
        guard !shortageLogged else { return }
        shortageLogged = true
        logger.warning("short of file descriptors: new transfers wait for finished ones to close their files (raise LimitNOFILE or ulimit -n)",
                       metadata: ["limit": "\(context.descriptorFloor + context.descriptorReserve)", "cause": "\(cause)"])
    }

    /// A download that found no descriptor (for its name, a connection, its digest, or the last
    /// connection of a split): tried again after `DescriptorLimit.retryDelay`, without spending
    /// an attempt. Its `.part` is closed meanwhile and kept on disk with its data (SetAsidePart;
    /// the next start reopens it), so that downloads waiting for descriptors do not hold them:
    /// under `ulimit -n 40`, 12 split downloads each kept theirs and none could open its digest's
    /// reader; under `ulimit -n 48`, 30 resumed downloads kept theirs, none could open its
    /// digest's reader, and no finished job could write its status file.
    func waitForDescriptors(_ job: Job, _ index: Int, cause: String) {
        noteDescriptorShortage(cause)
        if let part = job.part(of: index) { job.setAside(part, for: index) }
        carryOut(job.apply(.descriptorsShort(until: clock.now() + DescriptorLimit.retryDelay), to: index), job, index)
    }

    func start(_ entry: Scheduler.Entry) {
        guard let job = table.job(entry.unit.job), !job.isFinished(entry.unit.download) else { return }
        if job.machine.awaitsDuplicateCheck { return judgeDuplicate(entry, job) }
        if job.part(of: entry.unit.download) == nil { return reserve(entry, job) }
        begin(entry, job)
    }

    /// Takes the download's output name on the start-steps worker (`PartReservation`); the
    /// download holds its place in `admission` meanwhile and starts once the name is back. A job
    /// that left meanwhile keeps the `.part` only if it waits in hold/ or the inbox.
    private func reserve(_ entry: Scheduler.Entry, _ job: Job) {
        let index = entry.unit.download
        let reservation: PartReservation
        switch names.reservation(for: job.download(index), of: job, siblings: job.setAsideParts(besides: index)) {
        case .success(let made): reservation = made
        case .failure(.noDescriptors(let error)): return waitForDescriptors(job, index, cause: error.description)
        case .failure(.failed(let failure)): return reservationFailed(job, index, failure)
        }
        job.apply(.reserving, to: index)
        let token = job.token(index)
        admission.started(host: entry.host, className: entry.className)
        context.startSteps.sync([.task(reservation)]) { [self] _ in
            admission.finished(host: entry.host, className: entry.className)
            guard table.current(token) != nil else {
                let place = spool.whereIs(job: job.record.job, workName: job.workName, folder: job.record.folder ?? "")
                let claimedAgain = (try? FileSystem.lstatus(FileSystem.join(spool.work, job.workName))).map { UInt64($0.st_ino) == job.owner.claim }
                return reservation.release(keeping: place == .hold || place == .inbox || claimedAgain == true)
            }
            job.apply(.reservationBack, to: index)
            if !reservation.keepsEarlier { job.dropEarlierName(of: index, removing: false) }
            took(reservation.choice, entry, job)
        }
    }

    /// Goes on from a reservation: starts the transfer on the part taken, or files, waits or fails.
    private func took(_ choice: OutputNames.NameChoice, _ entry: Scheduler.Entry, _ job: Job) {
        let index = entry.unit.download
        switch choice {
        case .reserved(let part):
            noteDescriptor(of: part)
            job.take(part, for: index)
            // Stopping: the part waits, with its record (one restored from the part set aside is
            // written now), for the next start.
            if context.acceptsWork { begin(entry, job) } else { part.saveOwedRecord() }
        case .published(let file, let bytes, let sha256, let record):
            job.notePublished(record, for: index)
            logger.info("found the finished file of an earlier run", metadata: ["job": "\(job.record.job)", "file": "\(file)"])
            carryOut(job.apply(.foundFinished(file: file, bytes: bytes, sha256: sha256), to: index), job, index)
        case .ownerBusy(let owner):
            logger.debug("name in use, waiting for its owner", metadata: ["job": "\(job.record.job)", "owner": "\(owner)"])
            carryOut(job.apply(.nameOwnerBusy(until: clock.now() + 2000), to: index), job, index)
        case .noDescriptors(let error):
            waitForDescriptors(job, index, cause: error.description)
        case .failed(let failure):
            return reservationFailed(job, index, failure)
        }
    }

    /// A name that could not be taken: a full disk is waited out like a transfer's (`no_space`,
    /// whatever `retry.attempts` says); anything else fails the download.
    private func reservationFailed(_ job: Job, _ index: Int, _ failure: Failure) {
        guard failure.kind == .noSpace else { return endDownload(job, index, failure: failure) }
        // It counts as an attempt, so that the waits back off as a transfer's do.
        job.apply(.reservationNoSpace, to: index)
        endAttempt(job, index, TransferFailure(failure: failure, httpStatus: nil, retryAfter: nil, bytes: 0, resumedFrom: 0))
    }

    /// Starts the transfer of a download whose `.part` is taken.
    private func begin(_ entry: Scheduler.Entry, _ job: Job) {
        let index = entry.unit.download
        guard let part = job.part(of: index) else { return }
        if table.runningCount == 0 { lastStateRefresh = clock.now() }
        // The state on disk learns the count at each new attempt (a `hold` takes the file as it
        // is). A first attempt needs none: what recovery needs of a job from a routing folder or
        // claimed under another name (`x.1.url`) — its folder and its own name, which its `.part`
        // names as owner — the claim wrote before it moved the job (SpoolClaim), and the rest is
        // first written by the progress refresh, which a small job never reaches. A download
        // under another name than it asked for (`x.1.iso`: `x.iso` was taken) has it written at
        // once: a hold, a stop or a crash then keeps that name for the next run, whose reservation
        // tries it first (`PartReservation.EarlierName`), even if `x.iso` is free by then.
        let lifecycle = job.machine.downloads[index]
        let recordsState = lifecycle.beginsAttempt
            && (lifecycle.attempt > 0 || part.finalName != OutputNames.requestedName(of: job.download(index)))
        let newAttempt = lifecycle.beginsAttempt
        job.apply(.attemptBegins(partSize: part.size, recordMirror: part.record.mirror), to: index)
        let download = job.download(index)
        var request = TransferRequest(
            url: download.currentURL, headers: download.spec.headers, checksum: download.spec.checksum,
            maxFileSize: config.limits.maxFileSize, connectTimeout: config.limits.connectTimeout,
            lowSpeed: config.limits.lowSpeed, protocols: config.protocols, protocolList: config.protocolList)
        request.mirror = download.mirror
        request.scheme = download.spec.scheme(mirror: download.mirror)
        request.host = entry.host
        request.credentials = download.spec.credentials(forURL: download.currentURL)
        request.proxy = download.spec.proxy
        request.durable = config.fsync
        request.digest = config.digest
        request.maxRedirects = config.maxRedirects
        request.timeout = config.limits.timeout
        request.blockPrivateAddresses = config.blockPrivateAddresses
        request.minFreeSpace = config.limits.minFreeSpace
        request.fileMode = config.fileMode
        request.network = config.network(for: config.jobClass(named: job.record.className))
        request.fence = context.fence
        if let host = Transfer.proxiedTarget(of: request, over: request.network) {
            return lookUp(host, for: request, entry, job, newAttempt: newAttempt, recordsState: recordsState)
        }
        launch(request, entry, job, newAttempt: newAttempt, recordsState: recordsState)
    }

    /// Resolves a proxied target on the start-steps worker (`ProxyTargetLookup`), holding the
    /// download's place in `admission` meanwhile, then starts its transfer with what was found.
    private func lookUp(_ host: String, for request: TransferRequest, _ entry: Scheduler.Entry, _ job: Job,
                        newAttempt: Bool, recordsState: Bool) {
        let index = entry.unit.download
        let lookup = ProxyTargetLookup(host: host)
        job.apply(.lookingUp, to: index)
        let token = job.token(index)
        admission.started(host: entry.host, className: entry.className)
        context.startSteps.sync([.task(lookup)]) { [self] _ in
            admission.finished(host: entry.host, className: entry.className)
            guard table.current(token) != nil else { return }
            job.apply(.lookedUp, to: index)
            // Stopping: the part waits, with its record, for the next start.
            guard context.acceptsWork else { return }
            var checked = request
            checked.proxyTargetCheck = lookup.check
            launch(checked, entry, job, newAttempt: newAttempt, recordsState: recordsState)
        }
    }

    /// Makes the transfer of `request` and adds it to the multi handle.
    private func launch(_ request: TransferRequest, _ entry: Scheduler.Entry, _ job: Job, newAttempt: Bool, recordsState: Bool) {
        let index = entry.unit.download
        guard let part = job.part(of: index) else { return }
        if let resumed = piecesToResume(part, request, job, index) {
            return beginSegmented(entry, job, request, part, resumed, recordsState: recordsState, newAttempt: newAttempt)
        }
        let transfer: Transfer
        do {
            transfer = try Transfer(request, part: part, crashPlan: crashPlan, handles: multi)
            transfer.receiveBudget = context.receiveBudget
            try multi.add(transfer.easy)
        } catch {
            return endAttempt(job, index, JobRunner.startFailure(error, bytes: part.size))
        }
        admission.started(host: entry.host, className: entry.className)
        // The job by its id, not a weak reference: that would give every job a side table.
        transfer.restartedFromZero = { [unowned self, jobName = job.record.job, offset = transfer.requestedOffset, id = job.id] in
            logger.info("download restarted from 0: the server sent the whole file, not the range asked for",
                        metadata: ["job": "\(jobName)", "requested_from": "\(offset)"])
            table.job(id)?.apply(.restartedFromZero, to: index)
        }
        table.started(transfer, for: entry.unit)
        if mayBeSplit(job, index, request) {
            transfer.accepted = { [unowned self, key = transfer.easy.key] in splitCandidates.append(key) }
        }
        job.apply(.transferStarted(key: transfer.easy.key, url: Redaction.url(request.url),
                                   offset: transfer.requestedOffset, written: transfer.written,
                                   now: clock.now(), newAttempt: newAttempt), to: index)
        if recordsState { filer.saveState(job) }
        bandwidth.transferStarted(transfer, className: job.record.className, ownLimit: job.spec.downloads[index].maxDownloadLimit)
        JobLog.started(job, index, from: transfer.requestedOffset, logger: logger)
    }

    /// Why a transfer could not start, as the attempt's failure: its own refusal, else a full
    /// disk (`no_space`) or `internal`.
    static func startFailure(_ error: any Error, bytes: Int64) -> TransferFailure {
        if let refused = error as? TransferFailure { return refused }
        let systemError = error as? SystemError
        let kind: ErrorKind = systemError?.isNoSpace == true ? .noSpace : .internal
        return TransferFailure(failure: Failure(kind, "\(error)"), httpStatus: nil, retryAfter: nil, bytes: bytes, resumedFrom: 0,
                               outOfDescriptors: systemError.map(DescriptorLimit.isShortage) ?? false)
    }

    /// Forgets the transfer under `key` (JobTable.ended). The key is its easy handle's address,
    /// which a later handle may take: it leaves `growable` too, so that `growSplits` never splits
    /// another download by it.
    @discardableResult
    func transferEnded(key: Int) -> (transfer: Transfer, unit: Scheduler.Unit)? {
        if !growable.isEmpty {
            growable.remove(key)
            splitWaitsUntil[key] = nil
        }
        return table.ended(key: key)
    }

    /// Handles a transfer libcurl reports as done.
    func complete(key: Int, result: CURLcode) {
        if let download = table.download(ofConnection: key), let group = table.group(key: download) {
            return segmentEnded(key, result, of: download, group)
        }
        guard let (transfer, unit) = transferEnded(key: key) else { return }
        multi.remove(transfer.easy)
        admission.finished(host: transfer.request.host, className: table.job(unit.job)?.record.className ?? "default")
        bandwidth.transferEnded(key: key)
        if let descriptor = transfer.digestPending(after: result) {
            return hashing.append(PendingDigest(descriptor: descriptor, transfer: transfer, unit: unit, result: result))
        }
        finish(transfer, unit, result)
    }

    /// A completed transfer whose digests a worker still computes (FileDigester.end).
    struct PendingDigest {
        let descriptor: Int32
        let transfer: Transfer
        let unit: Scheduler.Unit
        let result: CURLcode
        /// Set for a split download: its pieces are hashed by its own digester.
        var group: SegmentedDownload?
    }

    var hashing: [PendingDigest] = []

    /// The descriptors to poll for digests being finished (readable once ready).
    var hashingDescriptors: [Int32] { hashing.map(\.descriptor) }

    /// Goes on with the transfers whose digests are ready: `isReady` says which descriptors the
    /// poll found readable.
    func digestsReady(_ isReady: (Int32) -> Bool) {
        let ready = hashing.filter { isReady($0.descriptor) }
        guard !ready.isEmpty else { return }
        hashing.removeAll { isReady($0.descriptor) }
        for pending in ready {
            if let group = pending.group {
                finishSplit(group, pending.transfer, pending.unit)
            } else {
                finish(pending.transfer, pending.unit, pending.result)
            }
        }
    }

    /// Whether a completed transfer still waits for its digests.
    var isHashing: Bool { !hashing.isEmpty }

    /// What follows a transfer's end once its digests are ready: publish, next mirror, retry or fail.
    func finish(_ transfer: Transfer, _ unit: Scheduler.Unit, _ result: CURLcode) {
        guard let job = table.job(unit.job) else { return }
        let index = unit.download
        job.apply(.transferEnded(now: clock.now()), to: index)
        switch transfer.finish(result) {
        case .completed(let result):
            publisher.publish(transfer.part, result, job, index)
        case .restart(let reason):
            try? transfer.part.truncate(to: 0)
            let effects = job.apply(.partUnusable(reason: reason), to: index)
            if effects.contains(.enqueue(due: nil)) {
                logger.info("partial data unusable, starting over: \(reason)", metadata: ["job": "\(job.record.job)"])
            }
            carryOut(effects, job, index)
        case .redirect(let location, let httpStatus):
            // The next hop on the same transfer, part and slot; headers stay with their origin.
            let refused: Failure
            switch RedirectPolicy.follow(transfer.request, to: location, status: httpStatus) {
            case .follow(let hop):
                do {
                    try transfer.follow(hop)
                    try multi.add(transfer.easy)
                    admission.started(host: transfer.request.host, className: job.record.className)
                    table.started(transfer, for: unit)
                    job.apply(.redirected(key: transfer.easy.key, now: clock.now()), to: index)
                    bandwidth.transferStarted(transfer, className: job.record.className,
                                              ownLimit: job.spec.downloads[index].maxDownloadLimit)
                    logger.debug("redirected", metadata: ["job": "\(job.record.job)", "to": "\(Redaction.url(hop.target))"])
                    return
                } catch {
                    refused = Failure(.internal, "cannot follow the redirect: \(error)")
                }
            case .refuse(let failure):
                refused = failure
            }
            endAttempt(job, index, TransferFailure(failure: refused, httpStatus: httpStatus, retryAfter: nil,
                                                   bytes: transfer.written, resumedFrom: transfer.appendedFrom,
                                                   isFinal: true))
        case .failed(let failure):
            // The data so far is recorded and made durable, so the next attempt resumes it.
            if transfer.written > 0 { try? transfer.part.saveRecord() }
            endAttempt(job, index, failure)
        }
    }

    /// A failed try of one mirror: the next mirror, a retry after backoff, or the end (RetryPolicy).
    func endAttempt(_ job: Job, _ index: Int, _ failure: TransferFailure) {
        // The agent's shortage, not the server's: the same attempt goes on once a descriptor frees.
        if failure.outOfDescriptors { return waitForDescriptors(job, index, cause: failure.failure.message) }
        let policy = config.jobClass(named: job.record.className)?.retry ?? config.retry
        let context = DownloadLifecycle.RetryContext(policy: policy, jitter: Double.random(in: 0..<1),
                                                     now: clock.now(), onceDeadline: onceDeadline)
        carryOut(job.apply(.attemptFailed(failure, context), to: index), job, index, failure: failure)
        if case .waiting(_, .retry) = job.phase(of: index) { closeWhileWaiting(job, index) }
    }

    /// A download that waits for its retry closes its `.part` meanwhile and keeps the name and the
    /// data (SetAsidePart): the next reservation reopens it as its own (`PartReservation`: no
    /// adopted job's distrust, a lock still held by a sync waited for, a final name taken meanwhile
    /// left to the publication). Before, each waiting download kept its descriptor: under
    /// `ulimit -n 48`, 20 jobs waiting an hour after a 503 or a dropped connection took every
    /// descriptor, and the jobs behind them never started.
    private func closeWhileWaiting(_ job: Job, _ index: Int) {
        guard let part = job.part(of: index) else { return }
        job.setAside(part, for: index)
    }

    /// Carries out what a transition of download `index` asks for (`DownloadLifecycle.Effect`), in
    /// order; `failure` is the failed try the effects follow from, if any.
    func carryOut(_ effects: [DownloadLifecycle.Effect], _ job: Job, _ index: Int, failure: TransferFailure? = nil) {
        for effect in effects {
            switch effect {
            case .enqueue(let due):
                if let due { scheduler.enqueue(job.schedulerEntry(index), due: due) } else { scheduler.enqueue(job.schedulerEntry(index)) }
            case .saveState:
                filer.saveState(job)
            case .settle:
                if job.isFinished { publisher.fileJob(job) } else { filer.saveState(job) }
            case .retryAfter:
                break
            case .logAttempt(let decision):
                if let failure { JobLog.attemptFailed(job, job.download(index), failure, decision, now: clock.wallSeconds(), logger: logger) }
            case .refetchFromZero:
                if let part = job.part(of: index) {
                    try? part.truncate(to: 0)
                    try? part.saveRecord()
                }
            case .countRetry:
                context.metrics?.retried()
            case .leftForNextRun:
                // `run --once` waits for free space no longer than `once_wait`: the next run goes on.
                logger.info("still no free space after once_wait: left waiting for the next run",
                            metadata: ["job": "\(job.record.job)", "retry_at": "\(job.record.retryAt ?? "")"])
            case .failAttempt(let failed):
                endAttempt(job, index, failed)
            case .failDownload(let failed):
                endDownload(job, index, failure: failed)
            }
        }
    }

    /// A download that failed for good. Its partial data stays (a `retry` resumes it) unless the
    /// data itself is what was wrong, or there is none.
    func endDownload(_ job: Job, _ index: Int, failure: Failure) {
        var dataRemoved = false
        let dataIsWrong = [.checksumMismatch, .tooLarge, .invalidJob, .exists, .internal].contains(failure.kind)
        if let part = job.part(of: index) {
            if failure.kind == .checksumMismatch, part.size > 0, keepBadCopy(of: part) {
                dataRemoved = true
            } else if dataIsWrong || part.size == 0 {
                part.discard()
                dataRemoved = true
            } else {
                try? part.saveRecord()
            }
            job.releasePart(of: index)
        } else if case .setAside(let aside)? = job.earlierName(of: index) {
            // Set aside while it waited: its data stays for a `retry` as an open part's does.
            let keeps = aside.holdsData && !dataIsWrong
            if keeps { aside.writeOwedRecord() }
            job.dropEarlierName(of: index, removing: !keeps)
            dataRemoved = !keeps
        }
        carryOut(job.apply(.failed(failure, dataRemoved: dataRemoved), to: index), job, index)
    }

    /// Keeps the data of a download that failed its checksum for good under a hidden name beside
    /// it, `.<name>.bad` (rename(2): one copy per name, the last replacing the one before), and
    /// removes its resume record; false when the rename failed (the data is then discarded).
    private func keepBadCopy(of part: PartFile) -> Bool {
        let name = JobRunner.badCopyName(for: part.finalName)
        do {
            try part.folder.rename(part.name, to: name)
        } catch {
            logger.warning("cannot keep the data that failed its checksum: \(error)", metadata: ["file": "\(part.finalPath)"])
            return false
        }
        try? part.folder.removeIfPresent(part.recordName)
        logger.info("data that failed its checksum kept for inspection", metadata: ["file": "\(part.folder.path)/\(name)"])
        return true
    }

    /// The hidden name a download's last data that failed its checksum is kept under.
    static func badCopyName(for finalName: String) -> String {
        "." + FileName.shortened(finalName, maxBytes: 200) + ".bad"
    }

    /// `run --once`: when the run's `once_wait` ends (monotonic ms); a download waiting for free
    /// space is not scheduled past it.
    var onceDeadline: Int64?
}
