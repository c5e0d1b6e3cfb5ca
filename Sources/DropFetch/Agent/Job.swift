import Glibc

/// A claimed job as the event loop tracks it: its spec, its record, and each download's
/// lifecycle. Its state changes only through `apply(_:to:)` (each download's `DownloadLifecycle`
/// and the job-level fields that follow from it) and the few named setters below; only the event
/// loop calls them.
final class Job {
    typealias Phase = DownloadLifecycle.Phase
    typealias WaitReason = DownloadLifecycle.WaitReason

    /// One download: what was asked, where it stands, and the files it owns.
    struct Download {
        let spec: DownloadSpec
        fileprivate(set) var lifecycle: DownloadLifecycle
        /// The `.part` this download owns from the moment its name is chosen until it is filed.
        fileprivate(set) var part: PartFile?
        /// The published part whose resume record still proves the file is this job's; removed once
        /// the job's status file names the file.
        fileprivate(set) var publishedRecord: PublishedRecord?

        var phase: Phase { lifecycle.phase }
        var status: DownloadStatus { lifecycle.status }
        var mirror: Int { lifecycle.mirror }
        var attempt: Int { lifecycle.attempt }
        var isFinished: Bool { lifecycle.isFinished }
        var currentURL: String { spec.urls[min(lifecycle.mirror, spec.urls.count - 1)] }
    }

    /// A published file's folder, its record's name and the record (nil when none was written).
    typealias PublishedRecord = (folder: DirectoryHandle, name: String, record: ResumeRecord?)

    let id: Int
    /// The file name in `work/<agent>/`.
    let workName: String
    /// Who owns this job's `.part` names: its name and the inode of its job file.
    let owner: PartOwner
    let spec: JobSpec
    private(set) var record: StatusRecord
    private(set) var downloads: [Download]
    /// Queue order among equal priorities (nanoseconds of arrival).
    let arrival: Int64
    /// Whether `work/<agent>/<name>.state.json` may exist: written by this run, or left by an
    /// earlier one (recovered, released). A job that never had one is filed without an unlink.
    private(set) var stateFileMayExist: Bool

    init(id: Int, workName: String, owner: PartOwner, spec: JobSpec, record: StatusRecord, arrival: Int64,
         stateFileMayExist: Bool = true) {
        self.id = id
        self.stateFileMayExist = stateFileMayExist
        self.workName = workName
        self.owner = owner
        self.spec = spec
        self.record = record
        self.arrival = arrival
        downloads = spec.downloads.map {
            Download(spec: $0, lifecycle: DownloadLifecycle(url: Redaction.url($0.urls[0]), mirrorCount: $0.urls.count))
        }
    }

    var isFinished: Bool { downloads.allSatisfy(\.isFinished) }

    var isRunning: Bool { downloads.contains { $0.lifecycle.isRunning } }

    /// Applies `event` to download `index` and brings the job's own fields along (`started`,
    /// `retry_at`); returns what the agent must do next (`DownloadLifecycle.Effect`).
    @discardableResult
    func apply(_ event: DownloadLifecycle.Event, to index: Int) -> [DownloadLifecycle.Effect] {
        let effects = downloads[index].lifecycle.handle(event)
        if case .transferStarted = event {
            record.retryAt = nil
            if record.started == nil { record.started = Timestamp.now() }
        }
        for effect in effects {
            if case .retryAfter(let milliseconds) = effect {
                record.retryAt = Timestamp.format(seconds: Int64(time(nil)) + (milliseconds + 999) / 1000)
            }
        }
        return effects
    }

    /// A schedule window or a quota holds download `index` back until `until` (monotonic ms),
    /// `retryAt` on the wall clock; effects are empty when it was held the same way already.
    @discardableResult
    func holdBack(_ index: Int, until: Int64, reason: WaitReason, retryAt: String) -> [DownloadLifecycle.Effect] {
        let sameTime = record.retryAt == retryAt
        var effects = downloads[index].lifecycle.handle(.heldBack(until: until, reason: reason))
        record.retryAt = retryAt
        if !sameTime, effects.isEmpty { effects = [.saveState] }
        return effects
    }

    /// Ends the schedule or quota holds of every download; true when one was held.
    func endHolds() -> Bool {
        var changed = false
        for index in downloads.indices where !downloads[index].lifecycle.handle(.holdEnded).isEmpty { changed = true }
        if changed { record.retryAt = nil }
        return changed
    }

    /// Download `index` owns `part` from now until it is published or given up.
    func take(_ part: PartFile, for index: Int) {
        downloads[index].part = part
        downloads[index].lifecycle.handle(.nameTaken(size: part.size, recordMirror: part.record.mirror,
                                                     finalPath: part.finalPath))
    }

    /// Download `index` no longer owns a `.part` (published, kept as a bad copy, or given up).
    func releasePart(of index: Int) {
        downloads[index].part = nil
    }

    /// The published file's record stays until the job's status file names the file.
    func notePublished(_ record: PublishedRecord?, for index: Int) {
        downloads[index].publishedRecord = record
    }

    /// Its state file is being written.
    func noteStateWritten() {
        stateFileMayExist = true
    }

    /// After a config reload, a job that has not started takes its class's new name and priority.
    func reclassify(className: String, priority: Int) {
        record.className = className
        record.priority = priority
    }

    /// The record with the per-download entries and the job's state brought up to date: running
    /// while a transfer runs, waiting (with `retry_at`) while every unfinished download waits.
    func snapshot() -> StatusRecord {
        var current = record
        current.downloads = downloads.map(\.status)
        current.attempts = downloads.map(\.attempt).max() ?? 0
        if isFinished { return current }
        let open = downloads.filter { !$0.isFinished }
        if isRunning || downloads.contains(where: { $0.phase == .publishing }) {
            current.state = .running
            current.retryAt = nil
        } else if open.allSatisfy(\.lifecycle.isWaiting) {
            current.state = .waiting
            current.waitReason = open.lazy.compactMap(\.phase.heldReason).first.map { $0 == .schedule ? "schedule" : "quota" }
        } else {
            current.state = .queued
            current.retryAt = nil
        }
        return current
    }

    /// The record to file once every download is over: done, cancelled or failed (the first
    /// failure's error, or a count of them), finished now.
    func finalRecord() -> StatusRecord {
        var final = snapshot()
        let failures = final.downloads.filter { $0.state != .done }
        final.state = failures.isEmpty ? .done : (failures.allSatisfy { $0.state == .cancelled } ? .cancelled : .failed)
        final.finished = Timestamp.now()
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
    /// (worked out on a copy of its lifecycle; the job itself is unchanged).
    func finalRecord(completing index: Int, file: String, result: TransferResult) -> StatusRecord {
        let current = downloads[index].lifecycle
        var prospective = current
        prospective.handle(.publishing)
        prospective.handle(.published(file: file, result: result))
        downloads[index].lifecycle = prospective
        defer { downloads[index].lifecycle = current }
        return finalRecord()
    }

    /// The record of a job that never queued (invalid, unsupported): failed now, every download with it.
    static func refusedRecord(_ base: StatusRecord, _ failure: Failure) -> StatusRecord {
        var refused = base
        refused.state = .failed
        refused.error = failure
        refused.finished = Timestamp.now()
        refused.folder = nil
        for index in refused.downloads.indices {
            refused.downloads[index].state = .failed
            refused.downloads[index].error = failure
        }
        return refused
    }
}

extension Job {
    /// The scheduler's entry for one of this job's downloads.
    func schedulerEntry(_ index: Int) -> Scheduler.Entry {
        Scheduler.Entry(unit: Scheduler.Unit(job: id, download: index), priority: record.priority,
                        arrival: Int(arrival), host: downloads[index].spec.host(mirror: downloads[index].mirror),
                        className: record.className)
    }
}
