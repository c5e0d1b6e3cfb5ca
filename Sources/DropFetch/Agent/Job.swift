/// A claimed job as the event loop tracks it: its spec, its record, and each download's phase.
/// Only the event loop changes it, through `JobTable` and the agent's handlers.
final class Job {
    /// Where one download stands; the job's own state is derived from these (`snapshot()`).
    enum Phase: Equatable {
        case queued
        /// A transfer runs, under this easy-handle key.
        case running(key: Int)
        /// Its output name is being taken on a worker (`PartReservation`).
        case reserving
        /// Set aside until this monotonic time: a retry, free space, or a name's owner.
        case waiting(until: Int64, reason: WaitReason)
        /// The transfer is over and its data is being made durable and given its final name (GroupCommit).
        case publishing
        case finished
    }

    enum WaitReason: Equatable {
        case retry
        /// `on_conflict: overwrite` and another job owns the name.
        case nameOwner
        /// A `schedule:` window pauses new transfers (`ScheduleGate`).
        case schedule
        /// A `quota:` is used up until its period resets.
        case quota
    }

    /// One download's runtime state beside its status entry.
    struct Download {
        var spec: DownloadSpec
        var status: DownloadStatus
        var phase = Phase.queued
        /// Index into `spec.urls` of the mirror being tried.
        var mirror = 0
        /// Mirrors tried in the current attempt.
        var mirrorsTried = 0
        /// Whether a mirror of the current attempt failed in a way worth a retry.
        var roundRetryable = false
        /// Attempts begun (docs/status.md): each goes round the mirrors once.
        var attempt = 0
        /// The next start begins a new attempt; false when resuming one that a hold, a
        /// shutdown or a crash interrupted (those cost no attempt).
        var beginsAttempt = true
        /// The `.part`'s size when the current attempt began; nil once the attempt grew it by
        /// `JobRunner.progressCredit` (it then costs no attempt: docs/config.md, `retry.attempts`).
        var attemptStartBytes: Int64?
        /// Attempts of this run that grew the `.part` that much: not counted against `retry.attempts`.
        var freeAttempts = 0
        /// Unusable-partial restarts in the current attempt (bounded to avoid loops).
        var restarts = 0
        /// The `.part` this download owns from the moment its name is chosen until it is filed.
        var part: PartFile?
        /// The published part whose resume record still proves the file is this job's; removed once
        /// the job's status file names the file.
        var publishedRecord: (folder: DirectoryHandle, name: String, record: ResumeRecord?)?
        /// Monotonic milliseconds when the running attempt started.
        var startedAt: Int64?

        var isFinished: Bool { phase == .finished }
        var currentURL: String { spec.urls[min(mirror, spec.urls.count - 1)] }
    }

    let id: Int
    /// The file name in `work/<agent>/`.
    let workName: String
    /// Who owns this job's `.part` names: its name and the inode of its job file.
    let owner: PartOwner
    let spec: JobSpec
    var record: StatusRecord
    var downloads: [Download]
    /// Queue order among equal priorities (nanoseconds of arrival).
    let arrival: Int64

    init(id: Int, workName: String, owner: PartOwner, spec: JobSpec, record: StatusRecord, arrival: Int64) {
        self.id = id
        self.workName = workName
        self.owner = owner
        self.spec = spec
        self.record = record
        self.arrival = arrival
        downloads = spec.downloads.map {
            Download(spec: $0, status: DownloadStatus(url: Redaction.url($0.urls[0]), file: nil, state: .queued))
        }
    }

    var isFinished: Bool { downloads.allSatisfy(\.isFinished) }

    var isRunning: Bool {
        downloads.contains { if case .running = $0.phase { true } else { false } }
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
        } else if open.allSatisfy({ if case .waiting = $0.phase { true } else { false } }) {
            current.state = .waiting
            current.waitReason = open.lazy.compactMap(\.phase.heldReason).first.map { $0 == .schedule ? "schedule" : "quota" }
        } else {
            current.state = .queued
            current.retryAt = nil
        }
        return current
    }
}

extension Job {
    /// The scheduler's entry for one of this job's downloads.
    func schedulerEntry(_ index: Int) -> Scheduler.Entry {
        Scheduler.Entry(unit: Scheduler.Unit(job: id, download: index), priority: record.priority,
                        arrival: Int(arrival), host: URLParts(downloads[index].currentURL)?.host ?? "",
                        className: record.className)
    }
}
