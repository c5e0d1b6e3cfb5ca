import Glibc

/// `dropfetch hold|release|cancel|retry JOB`: moves a job between the spool folders. A running agent
/// notices a job leaving its work folder (inotify) and stops its transfers at once. On a spool that
/// does not exist it throws `SpoolInspection.MissingSpool` and creates nothing.
public enum SpoolControl {
    public enum Action: String, Sendable, CaseIterable { case hold, release, cancel, retry }

    /// Why a control command could not be carried out.
    public struct ControlError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Carries out `action` on the job named `job` (with or without `.url`); returns where it went.
    public static func perform(_ action: Action, job: String, config: Config) throws -> String {
        let name = job.hasSuffix(".url") ? job : job + ".url"
        guard Spool.isJobName(name), !name.contains("/") else {
            throw ControlError(message: "'\(job)' is not a job name (a file name ending in .url)")
        }
        // A spool that is not there is not created here (`SpoolInspection.MissingSpool`).
        try SpoolInspection.requireSpool(config: config)
        let root = Agent.absolute(config.spool)
        let spool = Spool(root: root, agentID: config.agentID ?? Agent.hostName(), durable: config.fsync)
        for folder in [spool.hold, spool.failed, spool.inbox] { try FileSystem.makeDirectories(folder) }
        switch action {
        case .hold:
            let source = try find(name, in: inboxAndWork(spool), action: action)
            let target = try move(source, into: spool.hold)
            removeState(of: source)
            return target
        case .release:
            return try move(try find(name, in: [spool.hold], action: action), into: spool.inbox)
        case .retry:
            let source = try find(name, in: [spool.failed], action: action)
            let target = try move(source, into: spool.inbox)
            try? FileSystem.removeIfPresent(spool.failed + "/" + Spool.statusName(forJob: name))
            return target
        case .cancel:
            return try cancel(name, spool: spool, config: config)
        }
    }

    /// Files the job in failed/ as `cancelled` and removes its partial data.
    private static func cancel(_ name: String, spool: Spool, config: Config) throws -> String {
        let source = try find(name, in: inboxAndWork(spool) + [spool.hold], action: .cancel)
        let state = readState(of: source)
        let spec = JobFileReader.read(source, limit: config.limits.maxJobFileSize).flatMap { bytes in
            Result { () throws(JobFileError) in try JobFileParser.parse(bytes) }
        }
        let failure = Failure(.cancelled, "cancelled by dropfetch cancel")
        var record = StatusRecord(job: state?.job ?? name, state: .cancelled, className: state?.className ?? "default",
                                  priority: state?.priority ?? 0, agent: state?.agent ?? spool.agentID,
                                  submitted: state?.submitted ?? Timestamp.now(), attempts: state?.attempts ?? 0)
        record.started = state?.started
        record.finished = Timestamp.now()
        record.error = failure
        var parts: [String] = []
        if let state {
            record.downloads = state.downloads.map { download in
                var entry = download
                if entry.state != .done {
                    entry.state = .cancelled
                    entry.error = failure
                    if let file = entry.file { parts.append(Agent.partPath(for: file)) }
                }
                return entry
            }
        } else if case .success(let spec) = spec {
            let destinations = [Agent.absolute(config.destination ?? spool.root + "/downloads")]
                + config.classes.compactMap { $0.destination.map(Agent.absolute) }
            for download in spec.downloads {
                var entry = DownloadStatus(url: Redaction.url(download.urls[0]), file: nil, state: .cancelled)
                entry.error = failure
                record.downloads.append(entry)
                let fileName = download.out ?? FileName.fromURL(download.urls[0])
                for destination in destinations {
                    let part = Agent.partPath(for: destination + (download.dir.map { "/" + $0 } ?? "") + "/" + fileName)
                    if let saved = ResumeRecord.load(ResumeRecord.path(forPart: part)), download.urls.map(Redaction.url).contains(saved.url) {
                        parts.append(part)
                    }
                }
            }
        }
        let target = try spool.file(path: source, as: .failed, status: record)
        removeState(of: source)
        for part in parts { Agent.discardPartial(part) }
        return target
    }

    private static func inboxAndWork(_ spool: Spool) -> [String] {
        var folders = [spool.inbox]
        folders += ((try? FileSystem.entries(of: spool.inbox)) ?? [])
            .filter { !$0.name.hasPrefix(".") && ($0.isDirectory ?? FileSystem.isDirectory(spool.inbox + "/" + $0.name)) }
            .map { spool.inbox + "/" + $0.name }
        folders += ((try? FileSystem.entries(of: spool.workRoot)) ?? [])
            .filter { !$0.name.hasPrefix(".") }
            .map { spool.workRoot + "/" + $0.name }
        return folders
    }

    private static func find(_ name: String, in folders: [String], action: Action) throws -> String {
        for folder in folders where FileSystem.exists(folder + "/" + name) {
            return folder + "/" + name
        }
        let places = folders.map { FileSystem.baseName(of: $0) }.joined(separator: ", ")
        throw ControlError(message: "cannot \(action.rawValue) \(name): no such job in \(places)")
    }

    /// rename(2) into `folder`, never replacing: `x.url`, else `x.1.url`, …
    private static func move(_ source: String, into folder: String) throws -> String {
        for candidate in Spool.candidateNames(FileSystem.baseName(of: source)) {
            let target = folder + "/" + candidate
            do {
                try FileSystem.renameNoReplace(source, to: target)
                return target
            } catch {
                if error.code != EEXIST { throw error }
            }
        }
        throw ControlError(message: "no free name for \(source) in \(folder)")
    }

    private static func statePath(of jobPath: String) -> String {
        FileSystem.directoryName(of: jobPath) + "/" + Spool.stateName(forJob: FileSystem.baseName(of: jobPath))
    }

    private static func readState(of jobPath: String) -> StatusRecord? {
        guard let file = try? FileDescriptor.open(statePath(of: jobPath), flags: O_RDONLY | O_NOFOLLOW),
              let bytes = try? file.readAll(limit: 1 << 22) else { return nil }
        return StatusRecord.decode(bytes)
    }

    private static func removeState(of jobPath: String) {
        try? FileSystem.removeIfPresent(statePath(of: jobPath))
    }
}
