/// One download's lifecycle: its phase, its status entry and its attempt counts, changed only by
/// `handle(_:)`, as `(phase, event) → (phase, effects)`, so that every change of a download's state
/// is made here and tested without threads, curl or disk (issue 23). The agent's parts send it
/// events and carry out the effects; none of them assigns a phase or a status field.
struct DownloadLifecycle {
    /// Where one download stands; the job's own state is derived from these (`Job.snapshot()`).
    enum Phase: Equatable {
        case queued
        /// A transfer runs, under this easy-handle key.
        case running(key: Int)
        /// Its output name is being taken on a worker (`PartReservation`).
        case reserving
        /// Its target is being looked up on a worker before a transfer through a proxy
        /// (`ProxyTargetLookup`, `block_private_addresses`).
        case lookingUp
        /// Set aside until this monotonic time (ms): a retry, free space, a name's owner, a schedule.
        case waiting(until: Int64, reason: WaitReason)
        /// The transfer is over; its data is being made durable and given its final name.
        case publishing
        case finished
    }

    enum WaitReason: Equatable {
        case retry
        /// `on_conflict: overwrite` and another job owns the name.
        case nameOwner
        /// The agent was out of descriptors for the download's name, a connection or its digest (`DescriptorLimit`).
        case descriptors
        /// A `schedule:` window pauses new transfers (`ScheduleGate`).
        case schedule
        /// A `quota:` is used up until its period resets.
        case quota
    }

    /// What the retry decision of a failed try depends on besides the download itself.
    struct RetryContext: Equatable {
        var policy: Config.Retry
        /// In [0, 1): spreads the retries of many downloads (Backoff).
        var jitter: Double
        /// Monotonic milliseconds.
        var now: Int64
        /// `run --once`: a download waiting for free space is not scheduled past this (monotonic ms).
        var onceDeadline: Int64?
    }

    enum Event {
        /// Its output name is being taken on a worker.
        case reserving
        /// The reservation came back; what it found follows as another event.
        case reservationBack
        /// Its proxied target is being looked up on a worker.
        case lookingUp
        /// The lookup came back: the transfer starts, or the attempt fails as blocked.
        case lookedUp
        /// The name is taken: a `.part` of `size` bytes whose record names `recordMirror`.
        case nameTaken(size: Int64, recordMirror: Int, finalPath: String)
        /// An earlier run of this job published the file already.
        case foundFinished(file: String, bytes: Int64, sha256: String?)
        /// The destination folder `from` was moved and the config names it `to`: its file is named there.
        case destinationMoved(from: String, to: String)
        /// `on_conflict: overwrite` and another job owns the name: try again at `until`.
        case nameOwnerBusy(until: Int64)
        /// The name could not be taken for lack of space: it counts as an attempt (the waits back off).
        case reservationNoSpace
        /// No descriptor for the name, a connection or the digest: tried again at `until`, no attempt counted.
        case descriptorsShort(until: Int64)
        /// A transfer is about to be made on a `.part` of `partSize` bytes whose record names `recordMirror`.
        case attemptBegins(partSize: Int64, recordMirror: Int)
        /// The transfer runs under easy-handle `key`, from `offset`, with `written` bytes in the `.part`.
        case transferStarted(key: Int, url: String, offset: Int64, written: Int64, now: Int64, newAttempt: Bool)
        /// The server sent the whole file instead of the range asked for.
        case restartedFromZero
        /// The running download now uses this many connections (segments, issue 26).
        case connections(Int)
        /// A segment's answer showed another file, or no range: the segments were stopped, the
        /// data truncated, and the download starts over on one connection (never split again).
        case segmentsRefused(reason: String)
        /// A split attempt failed as one connection would not (an error answer to a range, pieces
        /// failing `checksum=`): the next attempts run on one connection.
        case splitRefused
        /// libcurl reported the transfer done (monotonic ms).
        case transferEnded(now: Int64)
        /// The partial data cannot be resumed; it was truncated and the download starts over.
        case partUnusable(reason: String)
        /// The same transfer follows a redirect under `key`.
        case redirected(key: Int, now: Int64)
        /// A try of one mirror failed: next mirror, retry after backoff, or the end (RetryPolicy).
        case attemptFailed(TransferFailure, RetryContext)
        /// The data is being made durable and given its final name.
        case publishing
        /// Published as `file`.
        case published(file: String, result: TransferResult)
        /// Failed for good; `dataRemoved` when its partial data is gone (bytes 0).
        case failed(Failure, dataRemoved: Bool)
        /// The agent stops: the transfer is aborted with `written` bytes kept for the next start.
        case stopped(written: Int64)
        /// The job left the work folder (hold, cancel): its transfer was ended.
        case left
        /// A schedule window or a quota holds it back until `until` (monotonic ms).
        case heldBack(until: Int64, reason: WaitReason)
        /// The schedule or quota hold ended: queued again (the scheduler promotes its entry).
        case holdEnded
        /// An earlier run's state of this download (attempts, seconds, a published file).
        case restored(saved: DownloadStatus, attempts: Int)
        /// An earlier run left it waiting for a retry until `until` (monotonic ms).
        case waitsFromEarlierRun(until: Int64)
        /// The progress refresh of a running transfer.
        case progress(bytes: Int64, size: Int64?)
        /// The bandwidth meter's view of a running transfer.
        case rate(bytesPerSecond: Int64?, limit: Int64?)
    }

    /// What the agent does after a transition, in order.
    enum Effect: Equatable {
        /// Back in the run queue, at once or at `due` (monotonic ms).
        case enqueue(due: Int64?)
        /// The job's state file is rewritten.
        case saveState
        /// Filed if every download of the job is over, else its state saved.
        case settle
        /// A retry is due in this many milliseconds (the job's `retry_at`).
        case retryAfter(milliseconds: Int64)
        /// The failed try and what follows it are logged.
        case logAttempt(RetryPolicy.Decision)
        /// The data failed its checksum: the `.part` is truncated and the next try fetches from zero.
        case refetchFromZero
        /// Counted as a retry in the metrics.
        case countRetry
        /// `run --once` leaves a download waiting for free space past `once_wait` for the next run.
        case leftForNextRun
        /// The try ends as this failure (too many unusable restarts).
        case failAttempt(TransferFailure)
        /// The download fails for good (its data is dealt with by the caller, then `.failed`).
        case failDownload(Failure)
    }

    private(set) var phase = Phase.queued
    private(set) var status: DownloadStatus
    /// Index into the download's URLs of the mirror being tried.
    private(set) var mirror = 0
    let mirrorCount: Int
    /// Mirrors tried in the current attempt.
    private(set) var mirrorsTried = 0
    /// Whether a mirror of the current attempt failed in a way worth a retry.
    private(set) var roundRetryable = false
    /// Attempts begun (docs/status-files.md): each goes round the mirrors once.
    private(set) var attempt = 0
    /// The next start begins a new attempt; false when resuming one that a hold, a shutdown or a
    /// crash interrupted (those cost no attempt).
    private(set) var beginsAttempt = true
    /// The `.part`'s size when the current attempt began; nil once the attempt grew it by
    /// `progressCredit` (it then costs no attempt: docs/config.md, `retry.attempts`).
    private(set) var attemptStartBytes: Int64?
    /// Attempts of this run that grew the `.part` that much: not counted against `retry.attempts`.
    private(set) var freeAttempts = 0
    /// Unusable-partial restarts in the current attempt (bounded to avoid loops).
    private(set) var restarts = 0
    /// Monotonic milliseconds when the running attempt started.
    private(set) var startedAt: Int64?
    /// The most connections a transfer of this download had open at once (1 unsplit): what the
    /// status file of a finished download says (docs/status-files.md, `connections`).
    private(set) var mostConnections = 0
    /// The bytes on disk when this run first started a transfer of the download: what it fetched
    /// since is the status file's `fetched` (0 after the data had to be thrown away).
    private(set) var runStartBytes: Int64?
    /// Whether the download may be split over several connections: not once a segment was refused.
    private(set) var maySplit = true
    /// Phase changes so far: a worker's answer is for the phase it was asked in (`Job.Token`).
    private(set) var step = 0

    /// How much an attempt must add to the `.part` to cost no attempt: a server that sends a byte
    /// and resets cannot keep a download retrying for ever (each free attempt adds at least this,
    /// and `RetryPolicy.maxAttemptsInAll` caps them).
    static let progressCredit: Int64 = 64 << 10
    /// Unusable-partial restarts allowed in one attempt.
    static let maxRestarts = 3

    init(url: String, mirrorCount: Int) {
        status = DownloadStatus(url: url, file: nil, state: .queued)
        self.mirrorCount = max(1, mirrorCount)
    }

    var isFinished: Bool { phase == .finished }

    var isRunning: Bool { if case .running = phase { true } else { false } }

    var isWaiting: Bool { if case .waiting = phase { true } else { false } }

    /// Applies `event`; returns what the agent must do next. An event that does not fit the
    /// phase (a late answer for a download that moved on) changes nothing and asks for nothing.
    @discardableResult
    mutating func handle(_ event: Event) -> [Effect] {
        let before = phase
        defer { if phase != before { step &+= 1 } }
        switch event {
        case .reserving:
            phase = .reserving
        case .reservationBack:
            guard phase == .reserving else { return [] }
            phase = .queued
        case .lookingUp:
            phase = .lookingUp
        case .lookedUp:
            guard phase == .lookingUp else { return [] }
            phase = .queued
        case .nameTaken(let size, let recordMirror, let finalPath):
            // An attempt interrupted by a hold, a shutdown or a crash goes on at the mirror that wrote the data.
            if !beginsAttempt, size > 0 { mirror = min(recordMirror, mirrorCount - 1) }
            status.file = finalPath
        case .destinationMoved(let old, let new):
            if let file = status.file, let moved = FileSystem.moved(file, from: old, to: new) { status.file = moved }
        case .foundFinished(let file, let bytes, let sha256):
            status.file = file
            status.bytes = bytes
            status.sha256 = sha256
            status.state = .done
            status.error = nil
            phase = .finished
            return [.settle]
        case .nameOwnerBusy(let until):
            phase = .waiting(until: until, reason: .nameOwner)
            return [.enqueue(due: until)]
        case .descriptorsShort(let until):
            // A connection that found no descriptor ran: its download is queued again, not running.
            phase = .waiting(until: until, reason: .descriptors)
            status.state = .queued
            return [.enqueue(due: until)]
        case .reservationNoSpace:
            if beginsAttempt {
                attempt += 1
                beginsAttempt = false
            }
        case .attemptBegins(let partSize, let recordMirror):
            guard beginsAttempt else { return [] }
            attempt += 1
            beginsAttempt = false
            mirrorsTried = 0
            roundRetryable = false
            mirror = partSize > 0 ? min(recordMirror, mirrorCount - 1) : 0
        case .transferStarted(let key, let url, let offset, let written, let now, let newAttempt):
            // The bytes held when the attempt began: a split resume holds pieces past its prefix.
            if newAttempt { attemptStartBytes = max(offset, written) }
            phase = .running(key: key)
            status.state = .running
            status.connections = 1
            mostConnections = max(mostConnections, 1)
            if runStartBytes == nil { runStartBytes = max(offset, written) }
            status.url = url
            status.resumedFrom = offset
            status.bytes = written
            status.error = nil
            startedAt = now
        case .restartedFromZero:
            status.resumedFrom = 0
            runStartBytes = 0
        case .connections(let count):
            guard isRunning else { return [] }
            status.connections = max(1, count)
            mostConnections = max(mostConnections, count)
        case .segmentsRefused(let reason):
            maySplit = false
            return handle(.partUnusable(reason: reason))
        case .splitRefused:
            maySplit = false
        case .transferEnded(let now):
            phase = .queued
            if let startedAt {
                status.seconds += Double(now - startedAt) / 1000
                self.startedAt = nil
            }
        case .partUnusable(let reason):
            // The data was cut to nothing: whatever this run keeps, it fetched.
            runStartBytes = 0
            restarts += 1
            if restarts > DownloadLifecycle.maxRestarts {
                return [.failAttempt(TransferFailure(failure: Failure(.network, reason), httpStatus: nil,
                                                     retryAfter: nil, bytes: 0, resumedFrom: 0))]
            }
            status.state = .queued
            return [.enqueue(due: nil)]
        case .redirected(let key, let now):
            phase = .running(key: key)
            startedAt = now
        case .attemptFailed(let failure, let context):
            return attemptFailed(failure, context)
        case .publishing:
            phase = .publishing
        case .published(let file, let result):
            guard phase == .publishing else { return [] }
            status.state = .done
            status.file = file
            status.bytes = result.bytes
            status.size = nil
            status.httpStatus = result.httpStatus
            status.resumedFrom = result.resumedFrom
            status.sha256 = result.sha256
            status.error = nil
            status.connections = max(mostConnections, 1)
            status.fetched = max(0, result.bytes - (runStartBytes ?? result.bytes))
            phase = .finished
            return [.settle]
        case .failed(let failure, let dataRemoved):
            status.state = .failed
            status.error = failure
            status.connections = mostConnections > 0 ? mostConnections : nil
            status.fetched = runStartBytes.map { max(0, status.bytes - $0) }
            if dataRemoved { status.bytes = 0 }
            phase = .finished
            return [.settle]
        case .stopped(let written):
            phase = .queued
            status.state = .queued
            status.bytes = written
            return [.saveState]
        case .left:
            if !isFinished { phase = .queued }
        case .heldBack(let until, let reason):
            let wasHeld = phase.heldReason == reason
            phase = .waiting(until: until, reason: reason)
            status.state = .waiting
            return wasHeld ? [] : [.saveState]
        case .holdEnded:
            guard phase.heldReason != nil else { return [] }
            phase = .queued
            status.state = .queued
            return [.saveState]
        case .restored(let saved, let attempts):
            attempt = attempts
            beginsAttempt = attempts == 0 || saved.state == .waiting
            // `seconds` is this run's transfer time (with `fetched`, what speeds are made of): an
            // earlier run's is not carried over.
            if saved.state == .done, saved.file != nil {
                status = saved
                phase = .finished
            }
        case .waitsFromEarlierRun(let until):
            guard !isFinished else { return [] }
            phase = .waiting(until: until, reason: .retry)
            return [.enqueue(due: until)]
        case .progress(let bytes, let size):
            status.bytes = bytes
            status.size = size
        case .rate(let bytesPerSecond, let limit):
            status.bytesPerSecond = bytesPerSecond
            status.rateLimit = limit
        }
        return []
    }

    /// A failed try of one mirror: the next mirror, a retry after backoff, or the end.
    private mutating func attemptFailed(_ failure: TransferFailure, _ context: RetryContext) -> [Effect] {
        status.bytes = failure.bytes
        status.httpStatus = failure.httpStatus
        status.resumedFrom = failure.resumedFrom
        status.error = failure.failure
        restarts = 0
        mirrorsTried += 1
        // An attempt that added `progressCredit` to the `.part`, or its last bytes, costs none (a flaky link).
        if let start = attemptStartBytes, [.network, .timeout].contains(failure.failure.kind),
           failure.bytes - start >= DownloadLifecycle.progressCredit
            || (failure.bytes > start && status.size.map { failure.bytes >= $0 } == true) {
            freeAttempts += 1
            attemptStartBytes = nil
        }
        let outcome = RetryPolicy.Outcome(kind: failure.failure.kind, httpStatus: failure.httpStatus,
                                          retryAfter: failure.retryAfter, isFinal: failure.isFinal)
        let round = RetryPolicy.Round(mirrorsTried: mirrorsTried, mirrorCount: mirrorCount,
                                      attempt: attempt - freeAttempts, earlierRetryable: roundRetryable, attemptsInAll: attempt)
        if RetryPolicy.isRetryable(outcome, policy: context.policy) { roundRetryable = true }
        let decision = RetryPolicy.decide(outcome, round, policy: context.policy, jitter: context.jitter)
        var effects: [Effect] = [.logAttempt(decision)]
        // Data that failed its checksum is no base to resume on: the next try fetches from zero.
        if failure.failure.kind == .checksumMismatch, decision != .fail {
            effects.append(.refetchFromZero)
            status.bytes = 0
        }
        switch decision {
        case .nextMirror:
            mirror = (mirror + 1) % mirrorCount
            status.state = .queued
            phase = .queued
            effects.append(.enqueue(due: nil))
        case .retry(let delay):
            let milliseconds = Int64(delay.milliseconds)
            let due = context.now + milliseconds
            beginsAttempt = true
            status.state = .waiting
            phase = .waiting(until: due, reason: .retry)
            effects.append(.retryAfter(milliseconds: milliseconds))
            if failure.failure.kind == .noSpace, let deadline = context.onceDeadline, due > deadline {
                effects += [.leftForNextRun, .saveState]
            } else {
                effects += [.enqueue(due: due), .countRetry, .saveState]
            }
        case .fail:
            effects.append(.failDownload(failure.failure))
        }
        return effects
    }
}

extension DownloadLifecycle.Phase {
    /// Why a download waits when a schedule window or a quota holds it back; nil otherwise.
    var heldReason: DownloadLifecycle.WaitReason? {
        if case .waiting(_, let reason) = self, reason == .schedule || reason == .quota { return reason }
        return nil
    }
}
