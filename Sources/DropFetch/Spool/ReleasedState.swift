import Glibc

/// What a job released to the inbox brings back (`inbox/.x.state.json`, docs/spool.md "Released
/// state"), kept to the fields that cannot do harm: any job dropper can plant or edit that file.
///
/// Only the arrival time, the attempt count, the next try, whether each download's last attempt
/// was interrupted and the file name each had taken are taken, each clamped to a range; the job's
/// name, its folder, its class, its paths and its results are never read from it. A job released
/// with finished downloads fetches them again. A file name is only a hint: the download tries it
/// first only where the `.part` under it is provably this job's (its sealed record or mark,
/// `PartReservation.EarlierName`), so that partial data under `x.1.iso` is resumed there even
/// when `x.iso` was freed while the job was held.
struct ReleasedState: Equatable {
    /// Attempts beyond this are clamped: an attempt count only ever grows by one at a time.
    static let maxAttempts = 10_000
    /// A next try further away than this is clamped (the cap on `Retry-After`, 7 days).
    static let maxRetryDelay: Int64 = 7 * 86_400
    /// Download entries read at most (a job file of 64 KiB holds far fewer).
    static let maxDownloads = 10_000

    /// Arrival, seconds since the epoch: never after `now`.
    var submitted: Int64?
    /// When the job was first started, never after `now`.
    var started: Int64?
    var attempts: Int
    /// When the next attempt is due, within `maxRetryDelay` of `now`.
    var retryAt: Int64?
    /// Per download, in order: the last attempt was interrupted while waiting for a retry (it
    /// goes on without costing one).
    var waiting: [Bool]
    /// Per download, in order: the file name it had taken (no path), if any.
    var names: [String?] = []

    /// The hints in `bytes` (a state file's JSON), checked against `now`; nil when it is not one.
    static func parse(_ bytes: [UInt8], now: Int64) -> ReleasedState? {
        guard let record = StatusRecord.decode(bytes) else { return nil }
        func past(_ text: String?) -> Int64? {
            guard let text, let seconds = Timestamp.parse(text), seconds > 0 else { return nil }
            return min(seconds, now)
        }
        let retryAt = record.retryAt.flatMap(Timestamp.parse).map { min(max($0, 0), now + maxRetryDelay) }
        return ReleasedState(submitted: past(record.submitted), started: past(record.started),
                             attempts: min(max(record.attempts, 0), maxAttempts), retryAt: retryAt,
                             waiting: record.downloads.prefix(maxDownloads).map { $0.state == .waiting },
                             names: record.downloads.prefix(maxDownloads).map { $0.file.flatMap(fileName) })
    }

    /// The last component of `path` when it can be a file name in a folder: not empty, not `.` or
    /// `..`, at most NAME_MAX bytes, no NUL.
    private static func fileName(_ path: String) -> String? {
        let name = FileSystem.baseName(of: path)
        guard DirectoryHandle.isPlainComponent(name), name.utf8.count <= FileName.maxBytes, !name.utf8.contains(0) else { return nil }
        return name
    }

    /// A state record for the job file named `job` holding these hints and nothing else: what
    /// `JobIntake.admit` takes up as the job's previous state; `now` (wall seconds) stands in for
    /// a submission time the hints lack.
    func record(job: String, agent: String, now: Int64) -> StatusRecord {
        var record = StatusRecord(job: job, state: .queued, className: "default", priority: 0, agent: agent,
                                  submitted: Timestamp.format(seconds: submitted ?? now), attempts: attempts)
        record.started = started.map(Timestamp.format)
        record.retryAt = retryAt.map(Timestamp.format)
        record.downloads = waiting.enumerated().map { index, waits in
            DownloadStatus(url: "", file: index < names.count ? names[index] : nil, state: waits ? .waiting : .queued)
        }
        return record
    }
}
