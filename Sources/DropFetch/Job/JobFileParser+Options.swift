/// The option lines under a URL (docs/job-files.md): dropfetch's own keys, the aria2 options it applies,
/// and the aria2 options it ignores or refuses (``Aria2Options``).
extension JobFileParser {
    /// Keys an indented option line may carry that dropfetch applies; a list searched in order
    /// (a download gives a few keys, `out` first of all) costs less than a set hashed.
    static let downloadKeys: [String] = [
        "out", "dir", "checksum", "header", "max-download-limit", "split", "max-connection-per-server", "min-split-size",
        "http-user", "http-passwd", "ftp-user", "ftp-passwd", "all-proxy", "referer", "user-agent",
    ]

    /// Proxy schemes libcurl understands; `all-proxy` without a scheme means `http://`.
    static let proxySchemes: Set<String> = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    /// True for every key that belongs on an indented line under a URL, applied or not.
    static func isDownloadKey(_ key: String) -> Bool {
        downloadKeys.contains(key) || Aria2Options.rule(for: key) != nil
    }

    /// A download being read: its spec so far, and what can only be settled after its last option line.
    struct DownloadDraft {
        var spec: DownloadSpec
        /// The keys that may appear once seen so far: bit `n` for `downloadKeys[n]`.
        var seen: UInt32 = 0
        /// The folder part of `out=sub/f.iso`, joined to `dir` when the download is finished.
        var outFolder: String?
        var outLine = 0
        var httpUser: String?
        var httpPassword: (value: String, line: Int)?
        var ftpUser: String?
        var ftpPassword: (value: String, line: Int)?
        /// aria2 options accepted without effect, in order, each once.
        var ignored: [String] = []

        init(_ spec: DownloadSpec) { self.spec = spec }

        /// The finished spec: `out`'s folder joined to `dir`, credentials paired.
        func finished() throws(JobFileError) -> DownloadSpec {
            var spec = spec
            if let outFolder {
                if var absolute = spec.absoluteDir {
                    absolute.path += (absolute.path.hasSuffix("/") ? "" : "/") + outFolder
                    spec.absoluteDir = absolute
                } else {
                    spec.dir = spec.dir.map { $0 + "/" + outFolder } ?? outFolder
                }
                let folder = spec.absoluteDir?.path ?? spec.dir ?? ""
                guard folder.utf8.count <= maxDirectoryBytes else {
                    throw JobFileError(line: outLine, message: "dir and the folder of out together are longer"
                                       + " than \(maxDirectoryBytes) bytes")
                }
            }
            // Set only when given: each set of a boxed option compares all of them (DownloadSpec.setOption).
            if let http = try Self.credentials("http", user: httpUser, password: httpPassword) { spec.httpCredentials = http }
            if let ftp = try Self.credentials("ftp", user: ftpUser, password: ftpPassword) { spec.ftpCredentials = ftp }
            return spec
        }

        private static func credentials(_ prefix: String, user: String?, password: (value: String, line: Int)?)
        throws(JobFileError) -> DownloadSpec.Credentials? {
            guard let user else {
                guard let password else { return nil }
                throw JobFileError(line: password.line, message: "\(prefix)-passwd needs \(prefix)-user")
            }
            return DownloadSpec.Credentials(user: user, password: password?.value)
        }
    }

    /// Applies one indented `key=value` line to the download above it.
    static func applyDownloadOption(_ bytes: ArraySlice<UInt8>, line: Int,
                                    to download: inout DownloadDraft) throws(JobFileError) {
        let equals = bytes.firstIndex(of: ASCII.equals)
        let keyBytes = trimmed(bytes[..<(equals ?? bytes.endIndex)])
        guard let equals, isKeyName(keyBytes) else {
            if FileName.firstRange(of: Array("://".utf8), in: Array(keyBytes)) != nil {
                throw JobFileError(line: line, message: "a URL must start in column 1"
                                   + " (mirrors go on the same line, separated by TAB)")
            }
            // The rest of the line may be a password typed without `=`: only a known key is named.
            let word = text(trimmed(bytes).prefix { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: ":") })
            let named = downloadKeys.contains(word) ? " \(quoted(word))" : ""
            throw JobFileError(line: line, message: "malformed line\(named) (expected key=value; the line is not shown,"
                               + " it may hold a secret)")
        }
        let key = text(keyBytes)
        let valueBytes = trimmed(bytes[(equals + 1)...])
        let value = text(valueBytes)
        if let position = downloadKeys.firstIndex(of: key), key != "header" {
            let bit: UInt32 = 1 << UInt32(position)
            guard download.seen & bit == 0 else { throw duplicate(key, line: line) }
            download.seen |= bit
        }
        switch key {
        case "out": try applyOut(value, line: line, to: &download)
        case "dir": try applyDir(value, line: line, to: &download.spec)
        case "checksum": download.spec.checksum = try checksum(valueBytes, line: line)
        case "header":
            if let problem = headerProblem(valueBytes) {
                throw JobFileError(line: line, message: "invalid header\(headerName(valueBytes)): \(problem)"
                                   + " (its value is not shown)")
            }
            download.spec.headers.append(value)
        case "max-download-limit":
            let limit = try rate(valueBytes, line: line)
            if limit > 0, limit < DownloadSpec.minimumDownloadLimit {
                throw JobFileError(line: line, message: "max-download-limit \(limit) is below 1K, the least a download"
                                   + " may ask for (a slower download would hold its slot for ever)")
            }
            download.spec.maxDownloadLimit = limit == 0 ? nil : limit
        // Segmented downloads (issue 26), capped by the config's split (Config.Split.applied).
        case "split":
            download.spec.split = try connections(key, valueBytes, line: line)
        case "max-connection-per-server":
            download.spec.maxConnectionsPerServer = try connections(key, valueBytes, line: line)
        case "min-split-size":
            let size = try rate(valueBytes, line: line, key: key, unit: "bytes", example: "1M or 20M")
            guard size >= Config.Split.smallestMinSize else {
                throw JobFileError(line: line, message: "min-split-size \(size) is below 1M, the least aria2 accepts")
            }
            download.spec.minSplitSize = size
        case "http-user": download.httpUser = try credential(key, value, line: line)
        case "http-passwd": download.httpPassword = (try credential(key, value, line: line), line)
        case "ftp-user": download.ftpUser = try credential(key, value, line: line)
        case "ftp-passwd": download.ftpPassword = (try credential(key, value, line: line), line)
        case "all-proxy": download.spec.proxy = try proxy(value, line: line)
        case "referer", "user-agent":
            download.spec.headers.append(try namedHeader(key, value, line: line))
        default:
            try applyAria2Option(key, value, line: line, to: &download)
        }
    }

    /// An aria2 option dropfetch does not apply: ignored (and remembered) or refused.
    static func applyAria2Option(_ key: String, _ value: String, line: Int,
                                 to download: inout DownloadDraft) throws(JobFileError) {
        switch Aria2Options.rule(for: key) {
        case .ignored:
            break
        case .ignoredWhen(let harmless, let reason):
            guard FileName.asciiLowercased(value) == harmless else {
                throw JobFileError(line: line, message: "aria2 option '\(key)=\(value.prefix(40))' is not supported: \(reason)")
            }
        case .refused(let reason):
            throw JobFileError(line: line, message: "aria2 option '\(key)' is not supported: \(reason)")
        case nil:
            if jobKeys.contains(key) {
                throw JobFileError(line: line, message: "'\(key)' is a job-level key:"
                                   + " write it in column 1 before the first URL")
            }
            throw JobFileError(line: line, message: "unknown key '\(key)'")
        }
        if !download.ignored.contains(key) { download.ignored.append(key) }
    }

    /// `out=NAME` or, as in aria2, `out=sub/NAME` (the folder part goes below `dir`).
    static func applyOut(_ value: String, line: Int, to download: inout DownloadDraft) throws(JobFileError) {
        guard let slash = value.utf8.lastIndex(of: ASCII.slash) else {
            if let problem = FileName.validate(value) {
                throw JobFileError(line: line, message: "invalid out \(quoted(value)): \(problem)")
            }
            download.spec.out = value
            return
        }
        if value.utf8.first == ASCII.slash {
            throw JobFileError(line: line, message: "invalid out \(quoted(value)): is an absolute path"
                               + " (use dir= for the folder)")
        }
        let folder = String(decoding: value.utf8[..<slash], as: UTF8.self)
        let name = String(decoding: value.utf8[value.utf8.index(after: slash)...], as: UTF8.self)
        if let problem = directoryProblem(folder) ?? FileName.validate(name).map({ "file name \(quoted(name)) \($0)" }) {
            throw JobFileError(line: line, message: "invalid out \(quoted(value)): \(problem)")
        }
        download.spec.out = name
        download.outFolder = folder
        download.outLine = line
    }

    /// `dir=`: a relative subfolder, or an absolute path kept for the agent to resolve against the destination.
    static func applyDir(_ value: String, line: Int, to spec: inout DownloadSpec) throws(JobFileError) {
        guard value.utf8.first == ASCII.slash else {
            if let problem = directoryProblem(value) {
                throw JobFileError(line: line, message: "invalid dir \(quoted(value)): \(problem)")
            }
            spec.dir = value
            return
        }
        if value.utf8.count > maxDirectoryBytes {
            throw JobFileError(line: line, message: "invalid dir \(quoted(value)): is longer than \(maxDirectoryBytes) bytes")
        }
        let components = value.split(separator: "/")
        for component in components {
            let problem: String? = switch component {
            case ".", "..": "may not be '.' or '..'"
            case _ where component.unicodeScalars.contains(where: FileName.isControl): "contains a control character"
            default: nil
            }
            if let problem {
                throw JobFileError(line: line, message: "invalid dir \(quoted(value)): component"
                                   + " \(quoted(String(component))) \(problem)")
            }
        }
        spec.absoluteDir = DownloadSpec.AbsoluteDirectory(path: "/" + components.joined(separator: "/"), line: line)
    }

    /// A user name or password: any text without control characters (never quoted in messages).
    static func credential(_ key: String, _ value: String, line: Int) throws(JobFileError) -> String {
        if key.hasSuffix("-user"), value.isEmpty {
            throw JobFileError(line: line, message: "\(key) is empty")
        }
        if value.unicodeScalars.contains(where: FileName.isControl) {
            throw JobFileError(line: line, message: "\(key) contains a control character")
        }
        return value
    }

    /// `all-proxy=[SCHEME://][USER:PASSWORD@]HOST[:PORT]`, returned with its scheme (`http://` by default).
    static func proxy(_ value: String, line: Int) throws(JobFileError) -> String {
        let url = FileName.firstRange(of: Array("://".utf8), in: Array(value.utf8)) == nil ? "http://" + value : value
        let scheme = URLParts(url)?.scheme ?? ""
        guard !value.isEmpty, isWellFormedURL(url), proxySchemes.contains(scheme) else {
            throw JobFileError(line: line, message: "invalid all-proxy (not shown, it may hold a password): expected"
                               + " [http://][USER:PASSWORD@]HOST[:PORT] (or https, socks4, socks4a, socks5, socks5h)")
        }
        return url
    }

    /// ` 'Name'` of a `header=Name: value` whose name is a token (RFC 9110 §5.1), else "": an
    /// error names the header, never its value, which may be a key or a token.
    static func headerName(_ bytes: ArraySlice<UInt8>) -> String {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return "" }
        let name = trimmed(bytes[..<colon])
        let isToken = !name.isEmpty && name.allSatisfy { byte in
            (0x21...0x7E).contains(byte) && !Array("\"(),/:;<=>?@[\\]{}".utf8).contains(byte)
        }
        return isToken ? " \(quoted(text(name)))" : ""
    }

    /// `referer=URL` and `user-agent=TEXT`, sent as the `Referer` and `User-Agent` headers.
    static func namedHeader(_ key: String, _ value: String, line: Int) throws(JobFileError) -> String {
        if key == "referer", value == "*" {
            throw JobFileError(line: line, message: "referer=* (each mirror's own URL) is not supported;"
                               + " write the referring URL")
        }
        let header = (key == "referer" ? "Referer: " : "User-Agent: ") + value
        if let problem = headerProblem(ArraySlice(header.utf8)) {
            throw JobFileError(line: line, message: "invalid \(key) \(quotedSecret(value)): \(problem)")
        }
        return header
    }
}
