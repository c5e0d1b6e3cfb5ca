/// One job's rules from its admission until it is filed (issue 34): its phase, its record and each
/// download's lifecycle, changed only by `handle(_:wall:)` as `(state, event) → (state, effects)`.
/// Pure: no I/O, no curl, no clock read (the wall time arrives with each event, in seconds), so
/// every transition is tested without threads. The loop owns one per job (`Job`) and carries
/// out the effects; the parts doing I/O hold no job state.
struct JobMachine {
    enum Phase: Equatable {
        /// Admitted: its downloads run, wait, publish or are over.
        case active
        /// Its end is on its way to the finish worker (`JobFinish`), after this many failed filings.
        case committing(failures: Int)
        /// Filing failed (ENOSPC, EIO): filed again under `pendingFiling` at `due` (monotonic ms).
        case filingDue(at: Int64, failures: Int)
    }

    enum Event {
        /// What happened to download `index` (`DownloadLifecycle.Event`).
        case download(Int, DownloadLifecycle.Event)
        /// A schedule window or a quota holds download `index` back until `until` (monotonic ms),
        /// `retryAt` on the wall clock.
        case heldBack(Int, until: Int64, reason: DownloadLifecycle.WaitReason, retryAt: String)
        /// The schedule and quota holds of every download ended.
        case holdsEnded
        /// Its state file is being written.
        case stateWritten
        /// After a config reload, a job that has not started takes its class's new name and priority.
        case reclassified(className: String, priority: Int)
        /// Its filing was sent to the finish worker.
        case commitBegins
        /// Its filing did not begin after all (its last download was not published).
        case commitAbandoned
        /// Its filing failed: retried under `record` at `due` (monotonic ms). One that found no
        /// descriptor is not `counted`: the spool is not at fault, and the next backoff stays short.
        case filingFailed(StatusRecord, due: Int64, counted: Bool = true)
        /// It is to be judged a duplicate before a download starts (`duplicates: skip`).
        case duplicateCheckAsked
        /// It is no duplicate (or it waited for a job of its URL and then was not): its downloads run.
        case judgedNotDuplicate
    }

    private(set) var phase = Phase.active
    private(set) var record: StatusRecord
    private(set) var downloads: [DownloadLifecycle]
    /// The record a failed filing is retried with.
    private(set) var pendingFiling: StatusRecord?
    /// Whether `work/<agent>/<name>.state.json` may exist: written by this run, or left by an
    /// earlier one (recovered, released). A job that never had one is filed without an unlink.
    private(set) var stateFileMayExist: Bool
    /// Whether it waits to be judged a duplicate before its first download starts.
    private(set) var awaitsDuplicateCheck = false

    init(record: StatusRecord, downloads: [DownloadLifecycle], stateFileMayExist: Bool) {
        self.record = record
        self.downloads = downloads
        self.stateFileMayExist = stateFileMayExist
    }

    var isFinished: Bool { downloads.allSatisfy(\.isFinished) }

    var isRunning: Bool { downloads.contains { $0.isRunning } }

    var isCommitting: Bool { if case .committing = phase { true } else { false } }

    /// Filings that failed in a row (the delay before the next grows with them).
    var filingFailures: Int {
        switch phase {
        case .active: return 0
        case .committing(let failures), .filingDue(_, let failures): return failures
        }
    }

    /// Applies `event` at `wall` (seconds since the epoch); returns what the loop must do next.
    /// An event that does not fit the state (a late answer) changes nothing and asks for nothing.
    @discardableResult
    mutating func handle(_ event: Event, wall: Int64) -> [DownloadLifecycle.Effect] {
        switch event {
        case .download(let index, let downloadEvent):
            let effects = downloads[index].handle(downloadEvent)
            if case .transferStarted = downloadEvent {
                record.retryAt = nil
                if record.started == nil { record.started = Timestamp.format(seconds: wall) }
            }
            for case .retryAfter(let milliseconds) in effects {
                record.retryAt = Timestamp.format(seconds: wall + (milliseconds + 999) / 1000)
            }
            return effects
        case .heldBack(let index, let until, let reason, let retryAt):
            let sameTime = record.retryAt == retryAt
            var effects = downloads[index].handle(.heldBack(until: until, reason: reason))
            record.retryAt = retryAt
            if !sameTime, effects.isEmpty { effects = [.saveState] }
            return effects
        case .holdsEnded:
            var changed = false
            for index in downloads.indices where !downloads[index].handle(.holdEnded).isEmpty { changed = true }
            if changed { record.retryAt = nil }
            return changed ? [.saveState] : []
        case .stateWritten:
            stateFileMayExist = true
        case .reclassified(let className, let priority):
            record.className = className
            record.priority = priority
        case .commitBegins:
            phase = .committing(failures: filingFailures)
            pendingFiling = nil
        case .commitAbandoned:
            guard isCommitting else { return [] }
            phase = .active
        case .filingFailed(let final, let due, let counted):
            phase = .filingDue(at: due, failures: filingFailures + (counted ? 1 : 0))
            pendingFiling = final
        case .duplicateCheckAsked:
            awaitsDuplicateCheck = downloads.allSatisfy { $0.attempt == 0 && !$0.isFinished }
        case .judgedNotDuplicate:
            awaitsDuplicateCheck = false
        }
        return []
    }

    /// Download `index`'s transitions since it was admitted: an answer sent under one count is
    /// current while the count is the same (`Job.Token`).
    func step(of index: Int) -> Int { downloads[index].step }

    /// The record with the per-download entries and the job's state brought up to date: running
    /// while a transfer runs, waiting (with `retry_at`) while every unfinished download waits.
    func snapshot() -> StatusRecord {
        var current = record
        current.downloads = downloads.map(\.status)
        current.attempts = downloads.reduce(0) { max($0, $1.attempt) }
        if isFinished { return current }
        let open = downloads.lazy.filter { !$0.isFinished }
        if isRunning || downloads.contains(where: { $0.phase == .publishing }) {
            current.state = .running
            current.retryAt = nil
        } else if open.allSatisfy(\.isWaiting) {
            current.state = .waiting
            current.waitReason = open.lazy.compactMap(\.phase.heldReason).first.map { $0 == .schedule ? "schedule" : "quota" }
        } else {
            current.state = .queued
            current.retryAt = nil
        }
        return current
    }

    /// The record to file once every download is over: done, cancelled or failed (the first
    /// failure's error, or a count of them), finished at `wall`.
    func finalRecord(wall: Int64) -> StatusRecord {
        JobMachine.closed(snapshot(), wall: wall)
    }

    /// `record` as filed: its state from its downloads', finished at `wall`, its error the first
    /// failure's (or a count of them).
    private static func closed(_ record: consuming StatusRecord, wall: Int64) -> StatusRecord {
        var final = record
        let failures = final.downloads.lazy.filter { $0.state != .done }
        final.state = failures.isEmpty ? .done : (failures.allSatisfy { $0.state == .cancelled } ? .cancelled : .failed)
        final.finished = Timestamp.format(seconds: wall)
        final.folder = nil
        final.retryAt = nil
        if let first = failures.first?.error {
            final.error = failures.count == 1 || final.downloads.count == 1
                ? first
                : Failure(first.kind, "\(failures.count) of \(final.downloads.count) downloads failed; first: \(first.message)")
        }
        return final
    }

    /// The record to file once download `index`, the last one still open, is published as `file`
    /// (worked out on a copy of that download; this machine is unchanged).
    func finalRecord(completing index: Int, file: String, result: TransferResult, wall: Int64) -> StatusRecord {
        var download = downloads[index]
        download.handle(.publishing)
        download.handle(.published(file: file, result: result))
        guard download.isFinished, downloads.indices.allSatisfy({ $0 == index || downloads[$0].isFinished }) else {
            var prospective = self
            prospective.downloads[index] = download
            return prospective.finalRecord(wall: wall)
        }
        // What `snapshot` makes of a finished job, without a copy of the whole machine.
        var final = record
        final.downloads = downloads.indices.map { $0 == index ? download.status : downloads[$0].status }
        final.attempts = downloads.indices.reduce(0) { max($0, $1 == index ? download.attempt : downloads[$1].attempt) }
        return JobMachine.closed(final, wall: wall)
    }
}
