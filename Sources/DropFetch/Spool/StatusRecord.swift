import FoundationEssentials

/// The status file of docs/status-files.md: `done|failed/<name>.status.json`, and while a job runs
/// `work/<agent>/<name>.state.json` with `state: "running"`.
public struct StatusRecord: Decodable, Sendable, Equatable {
    public enum State: String, Decodable, Sendable {
        case queued, running, waiting, done, failed, cancelled
    }

    /// The most a status or state file is read of (UntrustedFile's bound): a few KiB in practice.
    static let maxFileSize = 1 << 22

    public var schema = 1
    /// The name as dropped (`x.url`), also when filed as `x.1.url`.
    public var job: String
    public var state: State
    public var className: String
    public var priority: Int
    public var agent: String
    public var submitted: String
    public var started: String?
    public var finished: String?
    public var attempts: Int
    /// aria2 options of the job file that had no effect (`JobSpec.ignoredOptions`); written only
    /// when there are some.
    public var ignoredOptions: [String]?
    public var downloads: [DownloadStatus]
    public var error: Failure?
    /// State files only: the inbox subfolder the job came from (its routing key).
    public var folder: String?
    /// State files only: when the next attempt is due (RFC 3339).
    public var retryAt: String?
    /// State files only: `schedule` or `quota` while a window or a quota holds the job back.
    public var waitReason: String?
    /// A duplicate (`duplicates: skip`): the record name in done/ of the job that fetched its URLs.
    public var duplicateOf: String?

    public init(job: String, state: State, className: String, priority: Int, agent: String,
                submitted: String, attempts: Int = 0, downloads: [DownloadStatus] = []) {
        self.job = job
        self.state = state
        self.className = className
        self.priority = priority
        self.agent = agent
        self.submitted = submitted
        self.attempts = attempts
        self.downloads = downloads
    }

    enum CodingKeys: String, CodingKey {
        case schema, job, state, className = "class", priority, agent, submitted, started, finished
        case attempts, ignoredOptions = "ignored_options", downloads, error, folder, retryAt = "retry_at"
        case waitReason = "reason", duplicateOf = "duplicate_of"
    }

    /// The JSON text with a final newline, keys in the order of docs/status-files.md.
    public func encoded() -> [UInt8] {
        var json = JSONText()
        json.beginObject()
        json.field("schema", schema)
        json.field("job", job)
        json.field("state", state.rawValue)
        json.field("class", className)
        json.field("priority", priority)
        json.field("agent", agent)
        json.field("submitted", submitted)
        json.field("started", started)
        json.field("finished", finished)
        json.field("attempts", attempts)
        if let ignoredOptions, !ignoredOptions.isEmpty {
            json.beginArray("ignored_options")
            for name in ignoredOptions { json.element(name) }
            json.endArray()
        }
        json.beginArray("downloads")
        for download in downloads {
            json.beginObject()
            json.field("url", download.url)
            json.field("file", download.file)
            json.field("state", download.state.rawValue)
            json.field("bytes", download.bytes)
            if let size = download.size { json.field("size", size) }
            json.field("http_status", download.httpStatus)
            json.field("resumed_from", download.resumedFrom)
            json.field("sha256", download.sha256)
            json.field("seconds", milliseconds: download.seconds)
            json.field("error", failure: download.error)
            if download.state == .running {
                json.field("bytes_per_second", download.bytesPerSecond)
                json.field("rate_limit", download.rateLimit)
                json.field("connections", download.connections)
            } else if download.state == .done || download.state == .failed || download.state == .cancelled {
                // Finished: the most connections it had open at once (null when no transfer ran),
                // and the bytes this run fetched.
                json.field("connections", download.connections)
                json.field("fetched", download.fetched)
            }
            json.endObject()
        }
        json.endArray()
        json.field("error", failure: error)
        if let folder { json.field("folder", folder) }
        if let retryAt { json.field("retry_at", retryAt) }
        if let waitReason { json.field("reason", waitReason) }
        if let duplicateOf { json.field("duplicate_of", duplicateOf) }
        json.endObject()
        return json.endLine()
    }

    public static func decode(_ bytes: [UInt8]) -> StatusRecord? {
        try? JSONDecoder().decode(StatusRecord.self, from: Data(bytes))
    }
}

/// One download's entry in a status or state file.
public struct DownloadStatus: Decodable, Sendable, Equatable {
    public enum State: String, Decodable, Sendable {
        case queued, running, waiting, done, failed, cancelled
    }

    /// Redacted: credentials are replaced by `***`.
    public var url: String
    public var file: String?
    public var state: State
    public var bytes: Int64
    /// The full size when known (state files).
    public var size: Int64?
    public var httpStatus: Int?
    public var resumedFrom: Int64
    public var sha256: String?
    public var seconds: Double
    public var error: Failure?
    /// State files, while running: the current speed (null until measured).
    public var bytesPerSecond: Int64?
    /// State files, while running: the bandwidth limit the transfer runs under, bytes per second
    /// (its share of the class and global limits, or its own `max-download-limit`); null when none.
    public var rateLimit: Int64?
    /// While running (state files): the connections the download has open now; once finished
    /// (done/ and failed/): the most it had open at once, 1 when it was not split; null when not known.
    public var connections: Int?
    /// Once finished: the bytes this run of the agent fetched (the rest was on disk from an earlier
    /// run); `seconds` is this run's time, so speeds count only what this run fetched.
    public var fetched: Int64?

    public init(url: String, file: String?, state: State) {
        self.url = url
        self.file = file
        self.state = state
        bytes = 0
        resumedFrom = 0
        seconds = 0
    }

    enum CodingKeys: String, CodingKey {
        case url, file, state, bytes, size, httpStatus = "http_status", resumedFrom = "resumed_from"
        case sha256, seconds, error, bytesPerSecond = "bytes_per_second", rateLimit = "rate_limit"
        case connections, fetched
    }

}
