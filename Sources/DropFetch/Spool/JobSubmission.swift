import Glibc

/// `dropfetch add`: a job file written into the inbox atomically under a short name a person can
/// type (`file.iso.url`, then `file.iso.1.url`), after the same checks `run` makes when it claims
/// it (JobFileParser, protocols, class), so that nothing `run` would refuse is written.
public struct JobSubmission: Sendable {
    /// What the command line asked for.
    public struct Request: Sendable {
        public var urls: [String]
        public var priority: Int?
        public var className: String?
        public var out: String?
        public var dir: String?
        public var checksum: String?
        public var headers: [String] = []
        public var limit: String?

        public init(urls: [String], priority: Int? = nil, className: String? = nil, out: String? = nil,
                    dir: String? = nil, checksum: String? = nil, headers: [String] = [], limit: String? = nil) {
            self.urls = urls
            self.priority = priority
            self.className = className
            self.out = out
            self.dir = dir
            self.checksum = checksum
            self.headers = headers
            self.limit = limit
        }
    }

    /// A request `run` would refuse, worded in terms of the command line.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The job file's text, each line with the command-line argument it came from.
    public let lines: [(text: String, argument: String)]
    /// The name the job file takes when its first choice is free: the URL's (or `--out`'s) file name.
    public let baseName: String

    /// Builds the job file for `request` and checks it as `run` would under `config`.
    public init(_ request: Request, config: Config) throws(Refusal) {
        let fields = request.urls + [request.className, request.out, request.dir, request.checksum, request.limit]
            .compactMap { $0 } + request.headers
        if let bad = fields.first(where: { $0.contains { $0.isNewline || $0 == "\t" } }) {
            throw Refusal(message: "line breaks and tabs are not allowed in arguments: \(Redaction.url(bad).debugDescription)")
        }
        var lines: [(text: String, argument: String)] = []
        if let priority = request.priority { lines.append(("priority=\(priority)", "--priority \(priority)")) }
        if let name = request.className { lines.append(("class=\(name)", "--class \(name)")) }
        lines.append((request.urls.joined(separator: "\t"), request.urls.map { Redaction.url($0) }.joined(separator: " ")))
        let options: [(key: String, flag: String, value: String?)] = [
            ("out", "--out", request.out), ("dir", "--dir", request.dir), ("checksum", "--checksum", request.checksum),
            ("max-download-limit", "--limit", request.limit),
        ]
        for option in options {
            guard let value = option.value else { continue }
            lines.append(("  \(option.key)=\(value)", "\(option.flag) \(value)"))
        }
        for header in request.headers { lines.append(("  header=\(header)", "--header '\(header)'")) }
        self.lines = lines
        let text = lines.map(\.text).joined(separator: "\n") + "\n"
        let spec: JobSpec
        do {
            spec = try JobFileParser.parse(Array(text.utf8))
        } catch {
            let argument = error.line.flatMap { $0 >= 1 && $0 <= lines.count ? lines[$0 - 1].argument : nil }
            throw Refusal(message: argument.map { "\($0): \(error.message)" } ?? error.message)
        }
        if text.utf8.count > config.limits.maxJobFileSize {
            throw Refusal(message: "the job would be \(text.utf8.count) bytes, over limits.max_job_file_size "
                + "(\(config.limits.maxJobFileSize))")
        }
        // The check `run` makes when it claims the job (JobAcceptance), worded for the command line.
        switch JobAcceptance.check(spec, folder: "", config: config) {
        case .success: break
        case .failure(.unsupportedProtocol(let url, let scheme, _)):
            throw Refusal(message: "\(Redaction.url(url)): scheme '\(scheme)' is not in protocols \(config.protocols) "
                + "(the config's protocols key)")
        case .failure(.unknownClass(let failure)):
            let known = config.classes.map(\.name)
            throw Refusal(message: "--class: \(failure.message)"
                + (known.isEmpty ? " (the config defines no classes)" : " (the config has: \(known.joined(separator: ", ")))"))
        }
        let base = request.out ?? FileName.fromURL(request.urls[0])
        baseName = JobSubmission.typeable(base)
    }

    /// Writes the job into `<spool>/inbox` (dot temp file, fsync, rename(2) never replacing) under
    /// the first name that no job in the inbox, work/, hold/, done/ or failed/ has, so that the
    /// name says which job a control command means. A spool not made yet is made first, as `run`
    /// makes it. Returns the job file's name.
    public func write(config: Config) throws -> String {
        try SpoolInspection.prepareSpool(config: config)
        let root = Agent.absolute(config.spool)
        let inbox = root + "/inbox"
        try FileSystem.makeDirectories(inbox, trusting: root)
        let text = lines.map(\.text).joined(separator: "\n") + "\n"
        let temp = inbox + "/." + baseName + ".\(getpid()).add.tmp"
        let file = try FileDescriptor.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o664)
        do {
            try file.write(Array(text.utf8))
            try file.sync()
        } catch {
            try? FileSystem.removeIfPresent(temp)
            throw error
        }
        let taken = JobSubmission.takenNames(root: root)
        for candidate in Spool.candidateNames(baseName + ".url") where !taken.contains(candidate) {
            do {
                try FileSystem.renameNoReplace(temp, to: FileSystem.join(inbox, candidate))
                return candidate
            } catch where error.code == EEXIST {
                continue
            } catch {
                try? FileSystem.removeIfPresent(temp)
                throw error
            }
        }
        try? FileSystem.removeIfPresent(temp)
        throw SystemError(code: EEXIST, operation: "rename (no free job name)", path: inbox + "/" + baseName + ".url")
    }

    /// Every job file name in the inbox (and its routing folders), the work folders, hold/ (and
    /// its routing folders), done/ and failed/.
    static func takenNames(root: String) -> Set<String> {
        var folders = [root + "/done", root + "/failed"]
        for parent in ["inbox", "hold", "work"] {
            let path = FileSystem.join(root, parent)
            if parent != "work" { folders.append(path) }
            for entry in (try? FileSystem.entries(of: path)) ?? [] where !entry.name.hasPrefix(".")
                && (entry.isDirectory ?? FileSystem.isDirectory(FileSystem.join(path, entry.name))) {
                folders.append(FileSystem.join(path, entry.name))
            }
        }
        return Set(JobLookup.jobs(in: folders).map(\.name))
    }

    /// The file name with what a shell would need quoted left out (letters, digits, `-_.+` stay),
    /// at most 64 characters; `job` when nothing is left.
    static func typeable(_ name: String) -> String {
        let allowed: Set<Character> = ["-", "_", ".", "+"]
        let kept = String(name.filter { $0.isASCII && ($0.isLetter || $0.isNumber || allowed.contains($0)) }.prefix(64))
        let trimmed = String(kept.drop { $0 == "." })
        return trimmed.isEmpty ? "job" : trimmed
    }
}
