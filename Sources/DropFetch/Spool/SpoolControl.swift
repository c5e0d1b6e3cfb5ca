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

    /// Carries out `action` on the job named `job` (its name with or without `.url`, or a unique
    /// prefix: `JobLookup`); returns where it went.
    public static func perform(_ action: Action, job: String, config: Config) throws -> String {
        // A spool that is not there is not created here (`SpoolInspection.MissingSpool`).
        try SpoolInspection.requireSpool(config: config)
        let spool = spool(config)
        for folder in [spool.hold, spool.failed, spool.inbox] { try FileSystem.makeDirectories(folder, trusting: spool.root) }
        switch action {
        case .hold:
            let source = try find(job, in: inboxAndWork(spool), action: action, root: spool.root)
            let state = readState(besideJob: source, agent: spool.agentID)
            let folder = routingFolder(of: source, spool: spool) ?? state?.record.folder ?? ""
            let holdFolder = folder.isEmpty ? spool.hold : FileSystem.join(spool.hold, folder)
            try FileSystem.makeDirectories(holdFolder, trusting: spool.root)
            // The state goes first: an agent that sees the job leave removes what is left behind.
            var parked: String?
            if let state {
                let temp = holdFolder + "/." + FileSystem.baseName(of: state.path) + ".hold.tmp"
                if state.released {
                    // A released job's sidecar is an inbox writer's file: only its checked hints go to hold/.
                    if (try? AtomicFile.writeTemp(state.record.encoded(), at: temp, mode: 0o644, durable: false)) != nil {
                        parked = temp
                        try? FileSystem.removeIfPresent(state.path)
                    }
                } else if (try? FileSystem.rename(state.path, to: temp)) != nil {
                    parked = temp
                }
            }
            let target = try move(source, into: holdFolder)
            if let parked {
                try? FileSystem.rename(parked, to: holdFolder + "/" + Spool.stateName(forJob: FileSystem.baseName(of: target)))
            }
            return target
        case .release:
            let source = try find(job, in: holdFolders(spool), action: action, root: spool.root)
            let relative = String(FileSystem.directoryName(of: source).dropFirst(spool.hold.count))
            let folder = spool.inbox + relative
            try FileSystem.makeDirectories(folder, trusting: spool.root)
            return try release(source, into: folder, agent: spool.agentID)
        case .retry:
            let source = try find(job, in: [spool.failed] + workFolders(spool), action: action, root: spool.root)
            guard source.hasPrefix(spool.failed + "/") else { return try retryNow(source, spool: spool) }
            let name = FileSystem.baseName(of: source)
            // The old record goes aside before the job leaves: an agent that fails the job again at
            // once files it as x.url, not as x.1.url beside a record about to be removed. A move
            // that fails puts the record back.
            let status = spool.failed + "/" + Spool.statusName(forJob: name)
            let aside = AtomicFile.tempPath(for: status)
            let setAside = (try? FileSystem.rename(status, to: aside)) != nil
            let target: String
            do {
                target = try move(source, into: spool.inbox)
            } catch {
                if setAside { try? FileSystem.rename(aside, to: status) }
                throw error
            }
            if setAside { try? FileSystem.removeIfPresent(aside) }
            return target
        case .cancel:
            return try cancel(job, spool: spool, config: config)
        }
    }

    /// The job names `action` could act on now, without `.url`, for shell completion.
    public static func candidates(for action: Action, config: Config) -> [String] {
        guard (try? SpoolInspection.requireSpool(config: config)) != nil else { return [] }
        let spool = spool(config)
        let folders: [String] = switch action {
        case .hold: inboxAndWork(spool)
        case .release: holdFolders(spool)
        case .cancel: inboxAndWork(spool) + holdFolders(spool)
        case .retry: [spool.failed] + workFolders(spool)
        }
        var seen = Set<String>()
        return JobLookup.jobs(in: folders).map { String($0.name.dropLast(4)) }.filter { seen.insert($0).inserted }
    }

    private static func spool(_ config: Config) -> Spool {
        Spool(root: Agent.absolute(config.spool), agentID: config.agentID ?? Agent.hostName(), durable: config.fsync)
    }

    /// `retry` of a claimed job that waits for a retry: back to the inbox with its state, its
    /// retry time dropped, so that it is claimed and started at once; an agent running it sees
    /// it leave (inotify) and keeps its partial data.
    private static func retryNow(_ source: String, spool: Spool) throws -> String {
        let name = FileSystem.baseName(of: source)
        guard let state = readState(besideJob: source, agent: spool.agentID), state.record.state == .waiting || state.record.retryAt != nil else {
            throw ControlError(message: "cannot retry \(String(name.dropLast(4))): it is not waiting for a retry "
                + "(retry takes a failed job or one that waits)")
        }
        let folder = state.record.folder.map { $0.isEmpty ? spool.inbox : spool.inbox + "/" + $0 } ?? spool.inbox
        try FileSystem.makeDirectories(folder, trusting: spool.root)
        return try release(source, into: folder, agent: spool.agentID)
    }

    /// Puts a held (or waiting) job back with its state, which the next claim takes up (arrival
    /// time, attempts, partial data) but without its retry time: a released job is due now. The
    /// state is written first, as `.x.state.json`, so that no agent claims the job without it.
    private static func release(_ source: String, into folder: String, agent: String) throws -> String {
        var state = readState(besideJob: source, agent: agent)
        state?.record.retryAt = nil
        if state?.record.state == .waiting || state?.record.state == .running { state?.record.state = .queued }
        for candidate in Spool.candidateNames(FileSystem.baseName(of: source)) {
            let target = FileSystem.join(folder, candidate)
            if FileSystem.exists(target) { continue }
            let sidecar = folder + "/" + Spool.releasedStateName(forJob: candidate)
            if let state { try AtomicFile.write(state.record.encoded(), to: sidecar, durable: false) }
            do {
                try FileSystem.renameNoReplace(source, to: target)
                if let state { try? FileSystem.removeIfPresent(state.path) }
                return target
            } catch {
                if state != nil { try? FileSystem.removeIfPresent(sidecar) }
                if error.code != EEXIST { throw error }
            }
        }
        throw ControlError(message: "no free name for \(source) in \(folder)")
    }

    /// Files the job in failed/ as `cancelled` and removes the partial data it owns.
    private static func cancel(_ typed: String, spool: Spool, config: Config) throws -> String {
        let source = try find(typed, in: inboxAndWork(spool) + holdFolders(spool), action: .cancel, root: spool.root)
        let name = FileSystem.baseName(of: source)
        let stateFile = readState(besideJob: source, agent: spool.agentID)
        let state = stateFile?.record
        let claim = (try? FileSystem.lstatus(source)).map { UInt64($0.st_ino) } ?? 0
        let spec = JobFileReader.read(source, limit: config.limits.maxJobFileSize).flatMap { bytes in
            Result { () throws(JobFileError) in try JobFileParser.parse(bytes) }
        }
        let failure = Failure(.cancelled, "cancelled by dropfetch cancel")
        let jobName = state?.job ?? name
        var record = StatusRecord(job: jobName, state: .cancelled, className: state?.className ?? "default",
                                  priority: state?.priority ?? 0, agent: state?.agent ?? spool.agentID,
                                  submitted: state?.submitted ?? Timestamp.now(), attempts: state?.attempts ?? 0)
        record.started = state?.started
        record.finished = Timestamp.now()
        record.error = failure
        // Each download as the state saw it; from the job file where the state has no entry or
        // only hints (a claim's state, a released job's), which name no URL.
        let saved = state?.downloads ?? []
        let listed = (try? spec.get())?.downloads ?? []
        record.downloads = (0..<max(saved.count, listed.count)).map { index in
            var entry = index < saved.count && (!saved[index].url.isEmpty || index >= listed.count) ? saved[index]
                : DownloadStatus(url: Redaction.url(listed[index].urls[0]), file: nil, state: .queued)
            if entry.state != .done {
                entry.state = .cancelled
                entry.error = failure
                // Its partial data is removed below (docs/status-files.md, `bytes`).
                entry.bytes = 0
            }
            return entry
        }
        let owner = PartOwner(job: jobName, claim: claim)
        let destinations = [Agent.absolute(config.destination ?? spool.root + "/downloads")]
            + config.classes.compactMap { $0.destination.map(Agent.absolute) }
        let key = RecordKey.folder().flatMap(RecordKey.read(inFolder:))
        // A download the agent published before the job left work/ (held as it was being filed)
        // is done: its status names the file, which stays (found by the soak: it was left unnamed).
        if case .success(let spec) = spec {
            for (index, download) in spec.downloads.enumerated() where index < record.downloads.count {
                guard record.downloads[index].state != .done,
                      let (path, bytes) = publishedFile(of: download, in: destinations, ownedBy: owner, key: key) else { continue }
                record.downloads[index].state = .done
                record.downloads[index].file = path
                record.downloads[index].bytes = bytes
                record.downloads[index].error = nil
            }
        }
        let target = try spool.file(path: source, as: .failed, status: record)
        if let stateFile { try? FileSystem.removeIfPresent(stateFile.path) }
        if case .success(let spec) = spec {
            for download in spec.downloads {
                let name = download.out ?? FileName.fromURL(download.urls[0])
                for destination in Set(destinations) {
                    guard let root = try? DirectoryHandle.openRoot(destination, create: false),
                          let folder = try? root.descend(download.dir ?? "", create: false) else { continue }
                    discardParts(of: name, in: folder, ownedBy: owner, key: key)
                }
            }
        }
        return target
    }

    /// The file `download` published for `owner` in one of `destinations` (its `.part` gone, its
    /// owner mark or record naming the job: `OutputNames.isPublished`), with its size; nil if none.
    private static func publishedFile(of download: DownloadSpec, in destinations: [String], ownedBy owner: PartOwner,
                                      key: RecordKey?) -> (path: String, bytes: Int64)? {
        guard let key else { return nil }
        let name = download.out ?? FileName.fromURL(download.urls[0])
        for destination in Set(destinations) {
            guard let root = try? DirectoryHandle.openRoot(destination, create: false),
                  let folder = try? root.descend(download.dir ?? "", create: false) else { continue }
            for candidate in OutputNames.variants(of: name).prefix(100) {
                guard let found = try? folder.status(candidate) else { continue }
                if (try? OutputNames.isPublished(candidate, found, in: folder, by: owner, key: key)) == true {
                    return (FileSystem.join(folder.path, candidate), Int64(found.st_size))
                }
            }
        }
        return nil
    }

    /// Removes the `.part` files (and records) among the names a download may have taken that
    /// this job owns (by its record or the owner marked on the part); another job's data of the
    /// same name is left alone. `key` checks the seals where this user may read it; without it a
    /// record or mark is read unchecked, which can only make this remove a hidden `.part` in the destination.
    private static func discardParts(of name: String, in folder: DirectoryHandle, ownedBy owner: PartOwner, key: RecordKey?) {
        for candidate in OutputNames.variants(of: name).prefix(100) {
            let part = PartFile.partName(for: candidate)
            let recordName = ResumeRecord.name(forPart: part)
            // A file the job published: no job's once it is filed (as its record, removed below).
            PartFile.removeMark(of: candidate, in: folder, owner: owner, key: key)
            // The record, else the owner marked on the part (a part with no record yet).
            guard let record = PartFile.readOwner(ofPart: part, in: folder, key: key) else { continue }
            if record.isOwned(by: owner) {
                try? folder.removeIfPresent(part)
                try? folder.removeIfPresent(recordName)
            }
        }
    }

    /// The inbox subfolder of a job file found in the inbox (nil for one in a work folder).
    private static func routingFolder(of path: String, spool: Spool) -> String? {
        guard path.hasPrefix(spool.inbox + "/") else { return nil }
        let relative = FileSystem.directoryName(of: String(path.dropFirst(spool.inbox.count + 1)))
        return relative == "." ? "" : relative
    }

    /// hold/ and its routing folders, at every depth.
    private static func holdFolders(_ spool: Spool) -> [String] {
        JobLookup.folders(below: spool.hold)
    }

    /// The inbox and its routing folders at every depth, then the work folders.
    private static func inboxAndWork(_ spool: Spool) -> [String] {
        JobLookup.folders(below: spool.inbox) + workFolders(spool)
    }

    private static func workFolders(_ spool: Spool) -> [String] {
        ((try? FileSystem.entries(of: spool.workRoot)) ?? [])
            .filter { !$0.name.hasPrefix(".") }
            .map { spool.workRoot + "/" + $0.name }
    }

    private static func find(_ typed: String, in folders: [String], action: Action, root: String) throws -> String {
        // The spool's folders searched (inbox, hold, failed, work), each named once.
        var seen = Set<String>()
        let places = folders.map { folder in
            folder.hasPrefix(root + "/") ? String(folder.dropFirst(root.count + 1).prefix { $0 != "/" }) : FileSystem.baseName(of: folder)
        }.filter { seen.insert($0).inserted }.joined(separator: ", ")
        return try JobLookup.find(typed, in: folders, verb: action.rawValue, places: places, root: root)
    }

    /// rename(2) into `folder`, never replacing: `x.url`, else `x.1.url`, …
    private static func move(_ source: String, into folder: String) throws -> String {
        for candidate in Spool.candidateNames(FileSystem.baseName(of: source)) {
            let target = FileSystem.join(folder, candidate)
            do {
                try FileSystem.renameNoReplace(source, to: target)
                return target
            } catch {
                if error.code != EEXIST { throw error }
            }
        }
        throw ControlError(message: "no free name for \(source) in \(folder)")
    }

    /// The state file beside a job: `x.state.json` in work/ and hold/, or in the inbox the hidden
    /// `.x.state.json` of a released job, of which only the checked hints count (`ReleasedState`).
    private static func readState(besideJob jobPath: String, agent: String) -> (path: String, record: StatusRecord, released: Bool)? {
        let folder = FileSystem.directoryName(of: jobPath)
        let name = FileSystem.baseName(of: jobPath)
        let statePath = folder + "/" + Spool.stateName(forJob: name)
        if let record = Spool.readRecord(at: statePath) { return (statePath, record, false) }
        let sidecar = folder + "/" + Spool.releasedStateName(forJob: name)
        let now = Int64(time(nil))
        guard let file = try? UntrustedFile.read(atPath: sidecar, limit: StatusRecord.maxFileSize),
              let hints = ReleasedState.parse(file.bytes, now: now) else { return nil }
        return (sidecar, hints.record(job: name, agent: agent, now: now), true)
    }
}
