import Foundation

/// The status file of DESIGN.md §3: `done|failed/<name>.status.json`, and while a job runs
/// `work/<agent>/<name>.state.json` with `state: "running"`.
public struct StatusRecord: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        case queued, running, waiting, done, failed, cancelled
    }

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
    public var downloads: [DownloadStatus]
    public var error: Failure?
    /// State files only: the inbox subfolder the job came from (its routing key).
    public var folder: String?
    /// State files only: when the next attempt is due (RFC 3339).
    public var retryAt: String?

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
        case attempts, downloads, error, folder, retryAt = "retry_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(schema, forKey: .schema)
        try container.encode(job, forKey: .job)
        try container.encode(state, forKey: .state)
        try container.encode(className, forKey: .className)
        try container.encode(priority, forKey: .priority)
        try container.encode(agent, forKey: .agent)
        try container.encode(submitted, forKey: .submitted)
        try container.encode(started, forKey: .started)
        try container.encode(finished, forKey: .finished)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(downloads, forKey: .downloads)
        try container.encode(error, forKey: .error)
        try container.encodeIfPresent(folder, forKey: .folder)
        try container.encodeIfPresent(retryAt, forKey: .retryAt)
    }

    /// Pretty, key-sorted JSON with a final newline.
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return Array("{}\n".utf8) }
        return Array(data) + [0x0A]
    }

    public static func decode(_ bytes: [UInt8]) -> StatusRecord? {
        try? JSONDecoder().decode(StatusRecord.self, from: Data(bytes))
    }
}

/// One download's entry in a status or state file.
public struct DownloadStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
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
        case sha256, seconds, error
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(file, forKey: .file)
        try container.encode(state, forKey: .state)
        try container.encode(bytes, forKey: .bytes)
        try container.encodeIfPresent(size, forKey: .size)
        try container.encode(httpStatus, forKey: .httpStatus)
        try container.encode(resumedFrom, forKey: .resumedFrom)
        try container.encode(sha256, forKey: .sha256)
        try container.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try container.encode(error, forKey: .error)
    }
}
