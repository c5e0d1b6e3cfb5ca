/// One parsed `.url` job file (docs/job-files.md): job-level options and its downloads.
public struct JobSpec: Sendable, Equatable {
    /// `priority=` (any Int64); nil when the file does not set it.
    public var priority: Int?
    /// `class=`; nil when the file does not set it.
    public var className: String?
    /// `duplicates=fetch` or `duplicates=skip`: the config's `duplicates` for this job; nil when unset.
    public var duplicates: Config.DuplicatePolicy?
    public var downloads: [DownloadSpec]
    /// aria2 options that were accepted without effect (docs/job-files.md), each once, in the order first
    /// seen; the status file lists them as `ignored_options`.
    public var ignoredOptions: [String]

    public init(priority: Int? = nil, className: String? = nil, downloads: [DownloadSpec],
                ignoredOptions: [String] = []) {
        self.priority = priority
        self.className = className
        self.downloads = downloads
        self.ignoredOptions = ignoredOptions
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
