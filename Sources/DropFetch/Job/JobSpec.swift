/// One parsed `.url` job file (docs/job-files.md): job-level options and its downloads.
public struct JobSpec: Sendable, Equatable {
    /// `priority=`; nil when the file does not set it.
    public var priority: Int?
    /// `class=`; nil when the file does not set it.
    public var className: String?
    public var downloads: [DownloadSpec]

    public init(priority: Int? = nil, className: String? = nil, downloads: [DownloadSpec]) {
        self.priority = priority
        self.className = className
        self.downloads = downloads
    }
}

/// One file to fetch: its mirrors in order and its per-download options.
public struct DownloadSpec: Sendable, Equatable {
    /// Mirrors of the same file, tried in order; never empty.
    public var urls: [String]
    public var out: String?
    public var dir: String?
    public var checksum: Checksum?
    /// Raw `Name: value` header lines; never contain CR or LF.
    public var headers: [String]
    /// Bytes per second from `max-download-limit`.
    public var maxDownloadLimit: Int64?
    /// 1-based line of the URL in the job file.
    public var line: Int

    public init(urls: [String], out: String? = nil, dir: String? = nil, checksum: Checksum? = nil,
                headers: [String] = [], maxDownloadLimit: Int64? = nil, line: Int) {
        self.urls = urls
        self.out = out
        self.dir = dir
        self.checksum = checksum
        self.headers = headers
        self.maxDownloadLimit = maxDownloadLimit
        self.line = line
    }
}

/// An expected digest from a `checksum=` line.
public struct Checksum: Sendable, Equatable {
    public enum Algorithm: String, Sendable, Equatable {
        case sha256 = "sha-256"
        case sha512 = "sha-512"
        case md5
    }

    public var algorithm: Algorithm
    /// Lower-case hex digest.
    public var hex: String

    public init(algorithm: Algorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex
    }
}

/// Why a job file is `invalid_job`, with the 1-based line it concerns (nil for whole-file problems).
public struct JobFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int?
    public var message: String

    public init(line: Int?, message: String) {
        self.line = line
        self.message = message
    }

    public var description: String {
        if let line { return "line \(line): \(message)" }
        return message
    }
}
