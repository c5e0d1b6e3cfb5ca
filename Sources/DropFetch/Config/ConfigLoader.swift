#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the YAML config of docs/config.md with libyaml and checks every key, type and range.
///
/// Unknown keys, duplicate keys, anchors, aliases and tags are refused; every error carries the
/// file, the 1-based line and column of the offending node, and its dotted key path.
public enum ConfigLoader {
    /// The largest config file accepted, in bytes.
    public static let maxFileSize = 1 << 20

    static let topLevelKeys = [
        "spool", "destination", "agent_id", "concurrency", "order", "once_wait", "retry", "limits",
        "protocols", "on_conflict", "content_disposition", "duplicates", "scan_interval", "lease", "fsync", "digest", "classes",
        "hooks", "metrics_file", "status_page", "log_level", "max_redirects", "claim_ahead", "block_private_addresses", "file_mode",
        "schedule", "quota", "split", "history",
    ] + networkKeys

    /// Reads and validates the file at `path`.
    public static func load(path: String) throws(ConfigError) -> Config {
        try parse(bytes: readFile(path), file: path)
    }

    /// Parses YAML text; `file` is only used in error messages.
    public static func parse(_ text: String, file: String) throws(ConfigError) -> Config {
        try parse(bytes: Array(text.utf8), file: file)
    }

    /// Parses UTF-8 YAML; an empty document (or one of only comments) yields the defaults.
    static func parse(bytes: [UInt8], file: String) throws(ConfigError) -> Config {
        guard bytes.count <= maxFileSize else {
            throw ConfigError(
                file: file, line: nil, column: nil, keyPath: "",
                message: "the config is larger than \(maxFileSize / 1024) KiB")
        }
        let root: YAMLNode?
        do throws(YAMLError) {
            root = try YAMLDocument.parse(bytes)
        } catch {
            throw ConfigError(
                file: file, line: error.mark?.line, column: error.mark?.column, keyPath: error.keyPath,
                message: error.message)
        }
        guard let root, !root.isNull else { return Config() }
        return try decode(ConfigField(file: file, path: "", node: root))
    }

    /// Builds a `Config` from the document's root mapping, starting from the defaults.
    static func decode(_ root: ConfigField) throws(ConfigError) -> Config {
        guard case .mapping = root.node.content else {
            throw root.error("expected a mapping of settings at the top level, got \(root.node.summary)")
        }
        var config = Config()
        // Classes inherit the top-level retry settings, which may come later in the file.
        var classes: ConfigField?
        // Windows and quotas name classes, which may come later in the file.
        var schedule: ConfigField?
        var quota: ConfigField?
        // Every top-level key is read even after an error, so that `check` reports each key's first
        // error (as a compiler does) rather than only the file's first.
        var errors: [ConfigError] = []
        for (key, field) in try root.entries(known: topLevelKeys, reporting: &errors) {
            do throws(ConfigError) {
                switch key {
                case "spool": config.spool = try field.filePath()
                case "destination": config.destination = try field.optionalFilePath()
                case "agent_id": config.agentID = try agentID(field)
                case "concurrency": config.concurrency = try concurrency(field)
                case "order": config.order = try field.choice([Config.Order.fifo, .lifo])
                case "once_wait": config.onceWait = try field.duration()
                case "retry": config.retry = try retry(field, inheriting: Config.Retry())
                case "limits": config.limits = try limits(field)
                case "protocols": config.protocols = try protocols(field)
                case "on_conflict":
                    config.onConflict = try field.choice([Config.ConflictPolicy.rename, .overwrite, .fail])
                case "content_disposition": config.contentDisposition = try field.bool()
                case "duplicates": config.duplicates = try field.choice([Config.DuplicatePolicy.off, .skip])
                case "scan_interval": config.scanInterval = try field.duration()
                case "lease": config.lease = try field.duration(minimum: .seconds(1))
                case "fsync": config.fsync = try field.bool()
                case "digest": config.digest = try field.choice([Config.DigestChoice.sha256, .none])
                case "classes": classes = field
                case "schedule": schedule = field
                case "quota": quota = field
                case "split": config.split = try split(field, inheriting: Config.Split())
                case "history": config.history = try history(field)
                case "hooks": config.hooks = try hooks(field)
                case "metrics_file": config.metricsFile = try field.optionalFilePath()
                case "status_page": config.statusPage = try statusPage(field)
                case "log_level": config.logLevel = try field.choice(Config.LogLevel.allCases)
                case "max_redirects": config.maxRedirects = try field.int(minimum: 0)
                case "claim_ahead": config.claimAhead = try field.int(minimum: 0)
                case "block_private_addresses": config.blockPrivateAddresses = try field.bool()
                case "file_mode": config.fileMode = try fileMode(field)
                case _ where networkKeys.contains(key):
                    try network(key, field, into: &config.network)
                default: break  // entries(known:) refused every other key
                }
            } catch {
                errors.append(error)
            }
        }
        var classesRead = true
        if let classes {
            do throws(ConfigError) {
                config.classes = try jobClasses(classes, retry: config.retry, network: config.network, split: config.split)
            } catch {
                errors.append(error)
                classesRead = false
            }
        }
        // Windows and quotas name classes: without them, every name would be an error of its own.
        if classesRead {
            do throws(ConfigError) {
                if let schedule { config.schedule = try self.schedule(schedule, classes: config.classes) }
            } catch {
                errors.append(error)
            }
            do throws(ConfigError) {
                if let quota { config.quotas = try quotas(quota, classes: config.classes) }
            } catch {
                errors.append(error)
            }
        }
        if !errors.isEmpty {
            // The first in the file leads; the others follow in file order.
            let ordered = errors.sorted { ($0.line ?? 0, $0.column ?? 0) < ($1.line ?? 0, $1.column ?? 0) }
            var lead = ordered[0]
            lead.more = Array(ordered.dropFirst())
            throw lead
        }
        return config
    }

    /// `file_mode`: octal permission bits for downloaded files, written `0644` (quoted or not).
    static func fileMode(_ field: ConfigField) throws(ConfigError) -> UInt32 {
        let text = try field.string()
        let digits = text.hasPrefix("0o") ? String(text.dropFirst(2)) : text
        guard !digits.isEmpty, digits.count <= 4, let mode = UInt32(digits, radix: 8), mode <= 0o777 else {
            throw field.error("expected octal permission bits such as 0644, got '\(text)'")
        }
        guard mode & 0o600 == 0o600 else {
            throw field.error("file_mode \(text) must let the owner read and write (0600)")
        }
        return mode
    }

    /// `status_page`: a file path whose folder also takes `status.json`, so the page cannot be that file.
    static func statusPage(_ field: ConfigField) throws(ConfigError) -> String? {
        guard let path = try field.optionalFilePath() else { return nil }
        let name = FileSystem.baseName(of: path)
        guard !path.hasSuffix("/"), name != ".", name != ".." else {
            throw field.error("expected the path of a file, got '\(path)'")
        }
        guard name != StatusPageFile.jsonName else {
            throw field.error("'\(StatusPageFile.jsonName)' is written beside the page; give the page another name, such as index.html")
        }
        return path
    }

    /// `agent_id` names the folder `work/<agent>/`, so it must be one plain path component.
    static func agentID(_ field: ConfigField) throws(ConfigError) -> String? {
        if field.node.isNull { return nil }
        let id = try field.string()
        let refused = id.contains("/") || id.hasPrefix(".") || id.utf8.count > 255
            || id.unicodeScalars.contains { $0.properties.generalCategory == .control }
        guard !refused else {
            throw field.error("expected a name usable as a folder (no '/', no leading '.', no control characters), got '\(id)'")
        }
        return id
    }

    static func concurrency(_ field: ConfigField) throws(ConfigError) -> Config.Concurrency {
        var concurrency = Config.Concurrency()
        for (key, field) in try field.entries(known: ["total", "per_host"]) {
            switch key {
            case "total": concurrency.total = try field.int(minimum: 1)
            case "per_host": concurrency.perHost = try field.int(minimum: 1)
            default: break
            }
        }
        return concurrency
    }

    /// A `retry` mapping; keys it leaves out keep the values of `base` (the top-level retry, for a class).
    static func retry(_ field: ConfigField, inheriting base: Config.Retry) throws(ConfigError) -> Config.Retry {
        var retry = base
        var delayFields: [ConfigField] = []
        for (key, field) in try field.entries(known: ["attempts", "initial_delay", "max_delay", "on_http"]) {
            switch key {
            case "attempts": retry.attempts = try field.int(minimum: 1)
            case "initial_delay":
                retry.initialDelay = try field.duration()
                delayFields.insert(field, at: 0)
            case "max_delay":
                retry.maxDelay = try field.duration()
                delayFields.append(field)
            case "on_http": retry.onHTTP = try httpStatuses(field)
            default: break
            }
        }
        guard retry.initialDelay <= retry.maxDelay else {
            throw (delayFields.first ?? field).error(
                "initial_delay \(Units.format(retry.initialDelay)) is longer than max_delay \(Units.format(retry.maxDelay))")
        }
        return retry
    }

    /// HTTP error statuses (400–599) worth a retry, each listed once.
    static func httpStatuses(_ field: ConfigField) throws(ConfigError) -> [Int] {
        var statuses: [Int] = []
        for item in try field.items() {
            let status = try item.int()
            guard (400...599).contains(status) else {
                throw item.error("expected an HTTP error status from 400 to 599, got \(status)")
            }
            guard !statuses.contains(status) else { throw item.error("\(status) is listed twice") }
            statuses.append(status)
        }
        return statuses
    }

    static func limits(_ field: ConfigField) throws(ConfigError) -> Config.Limits {
        var limits = Config.Limits()
        let keys = ["max_file_size", "max_job_file_size", "connect_timeout", "low_speed", "rate_limit",
                    "min_free_space", "timeout"]
        for (key, field) in try field.entries(known: keys) {
            switch key {
            case "max_file_size": limits.maxFileSize = try field.size(minimum: 1)
            case "max_job_file_size": limits.maxJobFileSize = try field.size(minimum: 1)
            case "connect_timeout": limits.connectTimeout = try field.duration(minimum: .milliseconds(1))
            case "low_speed": limits.lowSpeed = try lowSpeed(field)
            case "rate_limit": limits.rateLimit = try field.size()
            case "min_free_space": limits.minFreeSpace = try field.size()
            case "timeout": limits.timeout = try field.duration()
            default: break
            }
        }
        return limits
    }

    /// `low_speed`: abort a transfer slower than `bytes_per_second` for `for` (0 bytes/s disables it).
    static func lowSpeed(_ field: ConfigField) throws(ConfigError) -> Config.LowSpeed {
        var lowSpeed = Config.LowSpeed()
        for (key, field) in try field.entries(known: ["bytes_per_second", "for"]) {
            switch key {
            case "bytes_per_second": lowSpeed.bytesPerSecond = try field.size()
            // libcurl's CURLOPT_LOW_SPEED_TIME counts whole seconds.
            case "for": lowSpeed.duration = try field.duration(minimum: .seconds(1))
            default: break
            }
        }
        return lowSpeed
    }

    /// URL schemes dropfetch may fetch; `file` and anything unknown are refused.
    static let knownProtocols = ["http", "https", "ftp", "ftps", "sftp"]

    static func protocols(_ field: ConfigField) throws(ConfigError) -> [String] {
        var protocols: [String] = []
        for item in try field.items() {
            let name = try item.string().lowercased()
            guard name != "file" else {
                throw item.error("'file' is never allowed: a job must not read local files")
            }
            guard knownProtocols.contains(name) else {
                throw item.error(
                    "unknown protocol '\(name)'; expected some of \(knownProtocols.joined(separator: ", "))")
            }
            guard !protocols.contains(name) else { throw item.error("'\(name)' is listed twice") }
            protocols.append(name)
        }
        guard !protocols.isEmpty else { throw field.error("list at least one protocol, such as [http, https]") }
        return protocols
    }

    static func hooks(_ field: ConfigField) throws(ConfigError) -> Config.Hooks {
        var hooks = Config.Hooks()
        for (key, field) in try field.entries(known: ["on_done", "on_failed", "on_idle"]) {
            switch key {
            case "on_done": hooks.onDone = try command(field)
            case "on_failed": hooks.onFailed = try command(field)
            case "on_idle": hooks.onIdle = try command(field)
            default: break
            }
        }
        return hooks
    }

    /// A hook's argv: a non-empty list of non-empty strings, run without a shell (nothing means no hook).
    static func command(_ field: ConfigField) throws(ConfigError) -> [String]? {
        if field.node.isNull { return nil }
        guard case .sequence = field.node.content else {
            throw field.error("expected a command as a list such as [/usr/local/bin/notify, done], got \(field.node.summary)")
        }
        var argv: [String] = []
        for item in try field.items() {
            let argument = try item.string()
            guard !argument.utf8.contains(0) else { throw item.error("an argument cannot contain a NUL character") }
            argv.append(argument)
        }
        guard !argv.isEmpty else { throw field.error("expected a command, got an empty list") }
        return argv
    }

    /// Reads at most `maxFileSize` bytes of `path` (`open`, `read`, retried on EINTR).
    static func readFile(_ path: String) throws(ConfigError) -> [UInt8] {
        func failure(_ what: String, _ code: Int32) -> ConfigError {
            ConfigError(
                file: path, line: nil, column: nil, keyPath: "",
                message: "cannot \(what) the config file: \(String(cString: strerror(code)))")
        }
        var descriptor: Int32
        repeat {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
        } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { throw failure("open", errno) }
        defer { _ = close(descriptor) }

        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= maxFileSize {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("read", errno)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
        throw ConfigError(
            file: path, line: nil, column: nil, keyPath: "",
            message: "the config is larger than \(maxFileSize / 1024) KiB")
    }
}
