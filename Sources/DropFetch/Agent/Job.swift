/// A claimed job as the event loop tracks it: its spec, its record, and each download's progress.
/// Only the event loop changes it.
final class Job {
    /// One download's runtime state beside its status entry.
    struct Download {
        var spec: DownloadSpec
        var status: DownloadStatus
        /// Index into `spec.urls` of the mirror being tried.
        var mirror = 0
        /// Unusable-partial restarts in the current attempt (bounded to avoid loops).
        var restarts = 0
        /// The final path chosen at first start; kept so a resume writes the same file.
        var finalPath: String?
        /// Monotonic milliseconds when the running attempt started.
        var startedAt: Int64?

        var isFinished: Bool { status.state == .done || status.state == .failed || status.state == .cancelled }
        var currentURL: String { spec.urls[min(mirror, spec.urls.count - 1)] }
    }

    let id: Int
    /// The file name in `work/<agent>/`.
    let workName: String
    let spec: JobSpec
    var record: StatusRecord
    var downloads: [Download]
    let arrival: Int

    init(id: Int, workName: String, spec: JobSpec, record: StatusRecord, arrival: Int) {
        self.id = id
        self.workName = workName
        self.spec = spec
        self.record = record
        self.arrival = arrival
        downloads = spec.downloads.map {
            Download(spec: $0, status: DownloadStatus(url: Redaction.url($0.urls[0]), file: nil, state: .queued))
        }
    }

    var isFinished: Bool { downloads.allSatisfy(\.isFinished) }

    /// The record with the per-download entries brought up to date.
    func snapshot() -> StatusRecord {
        var current = record
        current.downloads = downloads.map(\.status)
        return current
    }
}
