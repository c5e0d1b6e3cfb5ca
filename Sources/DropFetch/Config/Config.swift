/// The agent's settings, as read from the YAML file of docs/config.md or built in.
public struct Config: Sendable, Equatable {
    public struct Concurrency: Sendable, Equatable {
        public var total: Int = 4
        public var perHost: Int = 2
        public init() {}
    }

    public enum Order: String, Sendable, Equatable { case fifo, lifo }

    public struct Retry: Sendable, Equatable {
        public var attempts: Int = 5
        public var initialDelay: Duration = .seconds(10)
        public var maxDelay: Duration = .seconds(30 * 60)
        public var onHTTP: [Int] = [408, 429, 500, 502, 503, 504]
        public init() {}
    }

    public struct LowSpeed: Sendable, Equatable {
        public var bytesPerSecond: Int64 = 1024
        public var duration: Duration = .seconds(60)
        public init() {}
    }

    public struct Limits: Sendable, Equatable {
        public var maxFileSize: Int64 = 50 * 1024 * 1024 * 1024
        public var maxJobFileSize: Int64 = 64 * 1024
        public var connectTimeout: Duration = .seconds(30)
        public var lowSpeed = LowSpeed()
        /// Bytes per second for all transfers together; 0 means none.
        public var rateLimit: Int64 = 0
        /// A download whose size is known waits instead of starting if it would leave less free
        /// space than this on the destination; 0 means no check.
        public var minFreeSpace: Int64 = 0
        /// Longest time one attempt may take (CURLOPT_TIMEOUT_MS); zero means no limit.
        public var timeout: Duration = .zero
        public init() {}
    }

    public enum ConflictPolicy: String, Sendable, Equatable { case rename, overwrite, fail }

    /// `duplicates`: whether a job whose every URL a job in done/ fetched already is filed as a
    /// duplicate of it instead of fetched (DESIGN §10 "Duplicates"; a job file's `duplicates=` wins).
    public enum DuplicatePolicy: String, Sendable, Equatable { case off, skip }

    /// `digest`: whether each download's SHA-256 is computed for its status file.
    public enum DigestChoice: String, Sendable, Equatable { case sha256, none }

    public struct ClassMatch: Sendable, Equatable {
        public var folder: String?
        public var url: String?
        public var host: String?
        public init(folder: String? = nil, url: String? = nil, host: String? = nil) {
            self.folder = folder
            self.url = url
            self.host = host
        }
    }

    public struct JobClass: Sendable, Equatable {
        public var name: String
        public var match = ClassMatch()
        public var priority: Int = 0
        public var maxActive: Int?
        public var destination: String?
        public var rateLimit: Int64?
        public var retry: Retry?
        /// `tls`, `ftp`, `sftp`, `proxy`, `no_proxy`, `netrc` of the class, keys it leaves out taken from the top level.
        public var network: Network?
        /// `split` of the class, keys it leaves out taken from the top level.
        public var split: Split?
        public init(name: String) { self.name = name }
    }

    public struct Hooks: Sendable, Equatable {
        public var onDone: [String]?
        public var onFailed: [String]?
        public var onIdle: [String]?
        public init() {}
    }

    public enum LogLevel: String, Sendable, Equatable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical
    }

    /// Spool root; relative paths are resolved against the working directory.
    public var spool: String = "./spool"
    /// Download folder; nil means `<spool>/downloads`.
    public var destination: String?
    /// nil means the host name.
    public var agentID: String?
    public var concurrency = Concurrency()
    public var order: Order = .fifo
    public var onceWait: Duration = .seconds(60)
    public var retry = Retry()
    public var limits = Limits()
    public var protocols: [String] = ["http", "https"] {
        didSet { protocolList = protocols.joined(separator: ",") }
    }
    /// `protocols` as CURLOPT_PROTOCOLS_STR takes them: joined once, not at every transfer.
    public private(set) var protocolList = "http,https"
    public var onConflict: ConflictPolicy = .rename
    public var contentDisposition = false
    public var duplicates: DuplicatePolicy = .off
    /// Period of full inbox rescans; zero means never.
    public var scanInterval: Duration = .seconds(30)
    /// How long this agent may act on its work folder's jobs after its last renewal of
    /// `work/<agent>/.lease` began (DESIGN.md §10 Fencing); others adopt them no sooner than a
    /// lease and a margin after the renewals stop.
    public var lease: Duration = .seconds(10)
    public var fsync = true
    /// `none` computes no SHA-256 (`sha256` is null in status files); a job's `checksum=` is checked either way.
    public var digest: DigestChoice = .sha256
    public var classes: [JobClass] = []
    public var hooks = Hooks()
    public var metricsFile: String?
    /// `status_page`: the HTML page of the whole spool, with `status.json` written beside it.
    public var statusPage: String?
    public var logLevel: LogLevel = .info
    /// CURLOPT_MAXREDIRS: more redirects than this fail with `redirect`.
    public var maxRedirects = 10
    /// Jobs an agent may claim beyond those it runs (nil: `concurrency.total`). This agent claims a
    /// job only when it is about to run it, which never exceeds the limit.
    public var claimAhead: Int?
    /// Refuse loopback, private, link-local and unspecified addresses at connect time.
    public var blockPrivateAddresses = false
    /// Permission bits of downloaded files.
    public var fileMode: UInt32 = 0o644
    /// `tls`, `ftp`, `sftp`, `proxy`, `no_proxy`, `netrc` (Config+Network.swift).
    public var network = Network()
    /// `schedule:` windows in file order; a later window wins where two are in force (Config+Schedule.swift).
    public var schedule: [ScheduleWindow] = []
    /// `quota:` caps (Config+Schedule.swift).
    public var quotas: [Quota] = []
    /// `split:` connections per download (Config+Split.swift).
    public var split = Split()
    /// `history:` retention of finished jobs (Config+History.swift); nil keeps them forever.
    public var history: History?

    public init() {}
}

/// A config problem, located in its file: `file:line:column: key.path: message`.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    /// 1-based; nil when the problem is not tied to a place (file unreadable).
    public var line: Int?
    public var column: Int?
    /// Dotted key path such as `limits.low_speed.for`; empty at the top level.
    public var keyPath: String
    public var message: String
    /// The file's other errors, in file order, after this one (the first): `check` prints them all.
    public var more: [ConfigError] = []

    /// This error and the others of its file, each without `more`, in file order.
    public var all: [ConfigError] {
        var first = self
        first.more = []
        return [first] + more
    }

    public init(file: String, line: Int?, column: Int?, keyPath: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        var place = file
        if let line { place += ":\(line)" }
        if let column { place += ":\(column)" }
        return keyPath.isEmpty ? "\(place): \(message)" : "\(place): \(keyPath): \(message)"
    }
}

extension Config {
    /// A config shared by reference and never changed: the agent's config in force, lent to
    /// parts and worker requests without copying its strings and arrays.
    final class Shared: Sendable {
        let config: Config

        init(_ config: Config) {
            self.config = config
        }
    }
}
