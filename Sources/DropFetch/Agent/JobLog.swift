import Glibc
import Logging

/// The log lines of a job's life (DESIGN.md §5): one per download start, failed attempt (with
/// what follows: the next mirror, a retry, or nothing), and filed job, each with the job, the
/// URL (redacted), the file, bytes, speed, duration, attempt and error kind as fields, so the
/// handler writes them as logfmt. Call sites stay one line.
enum JobLog {
    /// A download's transfer began.
    static func started(_ job: Job, _ index: Int, from offset: Int64, logger: Logger) {
        // The fields cost a dozen strings: built only when the line is written.
        guard logger.logLevel <= .info else { return }
        let download = job.download(index)
        var fields: Logger.Metadata = [
            "job": "\(job.record.job)", "url": "\(Redaction.url(download.currentURL))",
            "attempt": "\(download.attempt)",
        ]
        if let file = download.status.file { fields["file"] = "\(file)" }
        if download.spec.urls.count > 1 { fields["mirror"] = "\(download.mirror + 1)/\(download.spec.urls.count)" }
        if offset > 0 { fields["resume_from"] = "\(offset)" }
        logger.info("download started", metadata: fields)
    }

    /// A try of one mirror failed; `decision` is what the retry policy made of it.
    /// `now`: the agent's wall clock (seconds), for the retry's local time.
    static func attemptFailed(_ job: Job, _ download: Job.Download, _ failure: TransferFailure,
                              _ decision: RetryPolicy.Decision, now: Int64, logger: Logger) {
        var fields: Logger.Metadata = [
            "job": "\(job.record.job)", "url": "\(Redaction.url(download.currentURL))",
            "attempt": "\(download.attempt)", "bytes": "\(failure.bytes)",
            "error": "\(failure.failure.kind.rawValue)", "message": "\(failure.failure.message)",
        ]
        if let file = download.status.file { fields["file"] = "\(file)" }
        if let status = failure.httpStatus { fields["http_status"] = "\(status)" }
        switch decision {
        case .nextMirror:
            fields["next"] = "mirror"
        case .retry(let delay):
            fields["next"] = "retry"
            fields["retry_in"] = "\(HumanUnits.seconds(Double(delay.milliseconds) / 1000))"
            fields["retry_at"] = "\(Timestamp.local(seconds: now + Int64((delay.milliseconds + 999) / 1000)))"
        case .fail:
            fields["next"] = "none"
        }
        logger.warning("attempt failed", metadata: fields)
    }

    /// A job was filed in done/ or failed/ as `recordPath`: `job done` at info, `job failed` or
    /// `job cancelled` at warning with the error.
    static func filed(_ record: StatusRecord, at recordPath: String, logger: Logger) {
        guard logger.logLevel <= (record.state == .done ? .info : .warning) else { return }
        let downloads = record.downloads
        // The download a reader wants named: the first that did not finish, else the first.
        let named = downloads.first { $0.state != .done } ?? downloads.first
        let bytes = downloads.reduce(Int64(0)) { $0 + $1.bytes }
        // Speeds count what this run fetched, in this run's time: resumed bytes are not this run's.
        let fetched = downloads.reduce(Int64(0)) { $0 + ($1.fetched ?? $1.bytes) }
        let seconds = downloads.reduce(0) { $0 + $1.seconds }
        var fields: Logger.Metadata = [
            "job": "\(record.job)", "state": "\(record.state.rawValue)", "attempts": "\(record.attempts)",
            "bytes": "\(bytes)", "duration": "\(HumanUnits.seconds(seconds))",
        ]
        if let named {
            fields["url"] = "\(named.url)"
            if let file = named.file { fields["file"] = "\(file)" }
        }
        if fetched != bytes { fields["fetched"] = "\(fetched)" }
        if seconds > 0, fetched > 0 { fields["speed"] = "\(HumanUnits.compactRate(Int64(Double(fetched) / seconds)))" }
        if downloads.count > 1 { fields["downloads"] = "\(downloads.count)" }
        let recordName = recordPath.split(separator: "/").last.map(String.init) ?? recordPath
        if recordName != record.job { fields["record"] = "\(recordName)" }
        if let error = record.error {
            fields["error"] = "\(error.kind.rawValue)"
            fields["message"] = "\(error.message)"
        }
        if record.state == .done {
            logger.info("job done", metadata: fields)
        } else {
            logger.warning("job \(record.state.rawValue)", metadata: fields)
        }
    }
}
