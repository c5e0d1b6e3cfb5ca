/// One file to fetch: its mirrors in order and its per-download options.
public struct DownloadSpec: Sendable, Equatable {
    /// A user name and password from `http-user`/`http-passwd` or `ftp-user`/`ftp-passwd`.
    ///
    /// Neither contains a control character. Printing one never shows the password.
    public struct Credentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable {
        public var user: String
        /// Nil when only the user was given (libcurl then sends an empty password).
        public var password: String?

        public init(user: String, password: String? = nil) {
            self.user = user
            self.password = password
        }

        public var description: String { password == nil ? user : "\(user):***" }
        public var debugDescription: String { description }
        public var customMirror: Mirror { Mirror(self, children: ["user": user, "password": "***"]) }
    }

    /// An absolute `dir=` as written (normalised: no empty, `.` or `..` components), with its line.
    ///
    /// The parser does not know the job's destination: the agent resolves it with
    /// ``relative(to:)`` once the class has chosen the destination.
    public struct AbsoluteDirectory: Sendable, Equatable {
        /// Starts with `/`; components joined by single slashes, no trailing slash.
        public var path: String
        /// 1-based line of the `dir=` option in the job file.
        public var line: Int

        public init(path: String, line: Int) {
            self.path = path
            self.line = line
        }

        /// The subfolder of `destination` that `path` names (nil for the destination itself), or an
        /// `invalid_job` error naming the line when it is outside `destination` or a component below
        /// it is not a valid name (hidden, control characters, too long).
        ///
        /// The comparison is by components, after removing `.`, empty components and `..` (with the
        /// component before it) from `destination`; symbolic links are not resolved, so a `dir=`
        /// must name the destination as the config writes it.
        public func relative(to destination: String) throws(JobFileError) -> String? {
            var root: [Substring] = []
            for component in destination.split(separator: "/") where component != "." {
                if component == ".." { _ = root.popLast() } else { root.append(component) }
            }
            let components = path.split(separator: "/")
            guard components.starts(with: root) else {
                throw JobFileError(line: line, message: "dir \(JobFileParser.quoted(path)) is outside the destination"
                                   + " \(JobFileParser.quoted("/" + root.joined(separator: "/")))")
            }
            let below = components.dropFirst(root.count)
            for component in below {
                if let problem = FileName.validate(String(component)) {
                    throw JobFileError(line: line, message: "invalid dir \(JobFileParser.quoted(path)): component"
                                       + " \(JobFileParser.quoted(String(component))) \(problem)")
                }
            }
            return below.isEmpty ? nil : below.joined(separator: "/")
        }
    }

    /// Mirrors of the same file, tried in order; never empty.
    public var urls: [String] {
        didSet { parts = urls.map(URLParts.init) }
    }
    /// Each mirror's scheme and host as libcurl parses it (curl_url(3)), parsed once here: the
    /// protocol check, the class rules, the queue's lanes and the admission counts all read them.
    private(set) var parts: [URLParts?]
    /// The file name: one path component (a folder part of `out=sub/f.iso` is moved into ``dir``).
    public var out: String?
    /// A relative subfolder of the destination (`dir=`, plus the folder part of `out=`).
    public var dir: String?
    /// An absolute `dir=`; when set, ``dir`` is nil and ``subfolder(in:)`` gives the subfolder.
    public var absoluteDir: AbsoluteDirectory? {
        get { box?.value.absoluteDir }
        set { setOption(\.absoluteDir, newValue) }
    }
    public var checksum: Checksum? {
        get { box?.value.checksum }
        set { setOption(\.checksum, newValue) }
    }
    /// Raw `Name: value` header lines; never contain CR or LF.
    public var headers: [String] {
        get { box?.value.headers ?? [] }
        set { setOption(\.headers, newValue) }
    }
    /// Bytes per second from `max-download-limit`; nil for none (`0` means none too, as in aria2).
    public var maxDownloadLimit: Int64? {
        get { box?.value.maxDownloadLimit }
        set { setOption(\.maxDownloadLimit, newValue) }
    }
    /// `split=`: connections asked for this download (capped by the config's `split.connections`).
    public var split: Int? {
        get { box?.value.split }
        set { setOption(\.split, newValue) }
    }
    /// `max-connection-per-server=`: connections asked for, as `split=` (the smaller one wins).
    public var maxConnectionsPerServer: Int? {
        get { box?.value.maxConnectionsPerServer }
        set { setOption(\.maxConnectionsPerServer, newValue) }
    }
    /// `min-split-size=`: the smallest piece, in bytes (never below the config's `split.min_size`).
    public var minSplitSize: Int64? {
        get { box?.value.minSplitSize }
        set { setOption(\.minSplitSize, newValue) }
    }
    /// The least `max-download-limit` a job file may give (1K): below it, invalid_job.
    public static let minimumDownloadLimit: Int64 = 1024
    /// `http-user`/`http-passwd`: used for the `http` and `https` mirrors.
    public var httpCredentials: Credentials? {
        get { box?.value.httpCredentials }
        set { setOption(\.httpCredentials, newValue) }
    }
    /// `ftp-user`/`ftp-passwd`: used for the `ftp`, `ftps` and `sftp` mirrors.
    public var ftpCredentials: Credentials? {
        get { box?.value.ftpCredentials }
        set { setOption(\.ftpCredentials, newValue) }
    }
    /// `all-proxy`: the proxy for every mirror of this download, as a URL with a scheme
    /// (`http://` added when the job file gives none); it replaces the config's proxy.
    public var proxy: String? {
        get { box?.value.proxy }
        set { setOption(\.proxy, newValue) }
    }

    /// The options above, which few job files give, kept out of line and shared by copies (nil
    /// when none is set): every queued job's spec stays in memory, and inline they made a
    /// download's spec 260 bytes, a page fault for every 16 jobs queued.
    private var box: OptionsBox?

    private struct Options: Sendable, Equatable {
        var absoluteDir: AbsoluteDirectory?
        var checksum: Checksum?
        var headers: [String] = []
        var maxDownloadLimit: Int64?
        var split: Int?
        var maxConnectionsPerServer: Int?
        var minSplitSize: Int64?
        var httpCredentials: Credentials?
        var ftpCredentials: Credentials?
        var proxy: String?
    }

    private final class OptionsBox: Sendable, Equatable {
        let value: Options
        init(_ value: Options) { self.value = value }
        static func == (lhs: OptionsBox, rhs: OptionsBox) -> Bool { lhs === rhs || lhs.value == rhs.value }
    }

    private mutating func setOption<Value>(_ field: WritableKeyPath<Options, Value>, _ value: Value) {
        var changed = box?.value ?? Options()
        changed[keyPath: field] = value
        box = changed == Options() ? nil : OptionsBox(changed)
    }

    /// 1-based line of the URL in the job file.
    public var line: Int

    public init(urls: [String], out: String? = nil, dir: String? = nil, checksum: Checksum? = nil,
                headers: [String] = [], maxDownloadLimit: Int64? = nil, line: Int) {
        self.urls = urls
        parts = urls.map(URLParts.init)
        self.out = out
        self.dir = dir
        self.line = line
        // Boxed options set only when given: each set compares them all (`setOption`).
        if let checksum { self.checksum = checksum }
        if !headers.isEmpty { self.headers = headers }
        if let maxDownloadLimit { self.maxDownloadLimit = maxDownloadLimit }
    }

    /// The user name and password to send to the mirror `url` (CURLOPT_USERNAME / CURLOPT_PASSWORD):
    /// ``httpCredentials`` for http(s), ``ftpCredentials`` for ftp, ftps and sftp. Nil when the URL
    /// carries its own `user:pass@`, which wins, as in aria2.
    public func credentials(forURL url: String) -> Credentials? {
        let known = urls.firstIndex(of: url).flatMap { parts[$0] }
        guard let parts = known ?? URLParts(url), !parts.hasUserInfo else { return nil }
        switch parts.scheme {
        case "http", "https": return httpCredentials
        case "ftp", "ftps", "sftp": return ftpCredentials
        default: return nil
        }
    }

    /// The host of mirror `mirror` (the last one past the end), lower-cased; empty when libcurl cannot parse it.
    func host(mirror: Int = 0) -> String {
        self.parts(mirror: mirror)?.host ?? ""
    }

    /// The scheme of mirror `mirror` (the last one past the end), lower-cased; empty when libcurl cannot parse it.
    func scheme(mirror: Int = 0) -> String {
        self.parts(mirror: mirror)?.scheme ?? ""
    }

    private func parts(mirror: Int) -> URLParts? {
        parts.isEmpty ? nil : parts[min(max(mirror, 0), parts.count - 1)]
    }

    /// The subfolder of `destination` to save into (nil for `destination` itself): ``dir``, or
    /// ``absoluteDir`` resolved against `destination` (an error naming the `dir=` line when it is outside).
    public func subfolder(in destination: String) throws(JobFileError) -> String? {
        guard let absoluteDir else { return dir }
        return try absoluteDir.relative(to: destination)
    }
}
