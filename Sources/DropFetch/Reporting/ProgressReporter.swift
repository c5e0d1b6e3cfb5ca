/// Calls the `Agent.Options.progress` observer from the event loop: at most every
/// `interval` ms while transfers run, and once more when the last one has ended so that a display
/// can clear. An agent without an observer has no reporter, hence no timer for it.
struct ProgressReporter {
    /// The shortest time between two reports (10 a second).
    static let interval: Int64 = 100

    private let observer: ProgressObserver
    private var lastReport = Int64.min
    /// The last report named running downloads: an idle one is owed when they end.
    private var showing = false

    init(observer: @escaping ProgressObserver) { self.observer = observer }

    /// When the next report is due (monotonic ms), or nil while idle and already reported so.
    func deadline(running: Int) -> Int64? {
        guard running > 0 || showing else { return nil }
        return lastReport == .min ? 0 : lastReport + ProgressReporter.interval
    }

    /// Reports what `snapshot` builds when a report is due at `now`.
    mutating func reportIfDue(now: Int64, running: Int, snapshot: () -> ProgressSnapshot) {
        guard let due = deadline(running: running), now >= due else { return }
        let current = snapshot()
        lastReport = now
        showing = !current.isIdle
        observer(current)
    }

    /// The running downloads of `table`, oldest start first, with the scheduler's counts.
    static func snapshot(of table: JobTable, queued: Int, waiting: Int) -> ProgressSnapshot {
        var rows: [(started: Int64, download: ProgressSnapshot.Download)] = []
        for (transfer, unit) in table.allTransfers {
            guard let job = table.job(unit.job), unit.download < job.indices.count else { continue }
            let download = job.download(unit.download)
            let file = download.status.file.map { path in String(path.split(separator: "/").last ?? Substring(path)) }
            rows.append((download.lifecycle.startedAt ?? 0, ProgressSnapshot.Download(
                job: job.record.job, file: file, downloadsInJob: job.downloads.count, bytes: transfer.downloadedBytes,
                size: transfer.total, bytesPerSecond: download.status.bytesPerSecond)))
        }
        rows.sort { ($0.started, $0.download.job, $0.download.file ?? "") < ($1.started, $1.download.job, $1.download.file ?? "") }
        return ProgressSnapshot(downloads: rows.map(\.download), queued: queued, waiting: waiting)
    }
}
