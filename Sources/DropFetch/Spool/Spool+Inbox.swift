import Glibc

/// The inbox side of the spool: listing job files, claiming one, and the hints a released job
/// brings back. Everything here is read from folders that any job dropper can write: a routing
/// folder is reached from the inbox's own descriptor one component at a time, never through a
/// symlink, and every file is read through `UntrustedFile`.
extension Spool {
    /// What a scan of the inbox found.
    struct InboxScan {
        /// How many routing folders deep a job file may sit (`inbox/a/…/x.url`); deeper ones are
        /// reported, not read.
        static let maxDepth = 16

        var entries: [InboxEntry] = []
        /// A folder that could not be listed (EMFILE at a low `ulimit -n`, EACCES): the inbox
        /// was not read in full.
        var failure: SystemError?
        /// Routing folders deeper than `maxDepth`, relative to the inbox.
        var tooDeep: [String] = []
        /// Released states (`.x.state.json`, relative to the inbox) the listing showed: only a
        /// job with one has its released state read (`Spool.releasedStatePath(forJob:)`).
        var releasedStates: Set<String> = []
    }

    /// Lists every job file under the inbox (recursively); dot-files and non-`.url` names are skipped.
    func scanInbox() -> [InboxEntry] {
        scanInboxReporting().entries
    }

    /// `scanInbox`, also saying which folders could not be read or were too deep.
    /// `withTimes: false` leaves each entry's `modified` at 0 (no lstat(2) a file): for a caller
    /// that opens every file anyway and takes the time from its fstat(2).
    func scanInboxReporting(withTimes: Bool = true) -> InboxScan {
        var result = InboxScan()
        scan(folder: "", into: &result, depth: 0, withTimes: withTimes)
        return result
    }

    private func scan(folder: String, into result: inout InboxScan, depth: Int, withTimes: Bool) {
        let path = folder.isEmpty ? inbox : FileSystem.join(inbox, folder)
        guard depth <= InboxScan.maxDepth else {
            result.tooDeep.append(folder)
            return
        }
        let entries: [(name: String, isDirectory: Bool?)]
        do {
            entries = try FileSystem.entries(of: path)
        } catch {
            // A folder removed while the scan ran is not a failure.
            if error.code != ENOENT, error.code != ENOTDIR { result.failure = result.failure ?? error }
            return
        }
        for entry in entries {
            let relative = folder.isEmpty ? entry.name : FileSystem.join(folder, entry.name)
            if entry.name.hasPrefix(".") {
                if Spool.isReleasedStateName(entry.name) { result.releasedStates.insert(relative) }
                continue
            }
            let isDirectory = entry.isDirectory ?? FileSystem.isDirectory(FileSystem.join(path, entry.name))
            if isDirectory {
                scan(folder: relative, into: &result, depth: depth + 1, withTimes: withTimes)
            } else if Spool.isJobName(entry.name) {
                let modified = withTimes ? (try? FileSystem.lstatus(FileSystem.join(path, entry.name))).map {
                    Int64($0.st_mtim.tv_sec) * 1_000_000_000 + Int64($0.st_mtim.tv_nsec)
                } ?? 0 : 0
                result.entries.append(InboxEntry(relativePath: relative, modified: modified))
            }
        }
    }

    /// What a claim reads of the spool, as a `Sendable` value for the worker that runs it
    /// (`SpoolClaim`): the fixed paths, the inbox's and work folder's handles (opened by `open()`
    /// and never replaced) and the crash plan. The spool's own methods below go through it.
    struct Claiming: Sendable {
        let inbox: String
        let work: String
        let agentID: String
        let inboxFolder: DirectoryHandle?
        let workFolder: DirectoryHandle?
        let crashPlan: CrashPlan?

        /// The routing folder `folder` (`""` for the inbox itself), walked from the inbox's descriptor
        /// with O_NOFOLLOW | O_DIRECTORY at each component: a routing folder replaced by a symlink is
        /// ELOOP or ENOTDIR, never followed out of the inbox.
        func routingFolder(_ folder: String) throws(SystemError) -> DirectoryHandle {
            if let inboxFolder { return try inboxFolder.descend(folder, create: false) }
            return try DirectoryHandle.openRoot(inbox, create: false).descend(folder, create: false)
        }

        /// The work folder's handle, opened at `open()` (or now, for a spool that was not opened).
        func workHandle() throws(SystemError) -> DirectoryHandle {
            if let workFolder { return workFolder }
            return try DirectoryHandle.openRoot(work, create: false)
        }

        /// A claimed job file in this agent's work folder, read through the folder's descriptor.
        func readClaimedJob(_ workName: String, limit: Int64) -> Result<JobFileReader.Contents, JobFileReader.Failure> {
            do {
                return JobFileReader.contents(of: workName, in: try workHandle(), limit: limit)
            } catch {
                return .failure(.transient(error))
            }
        }

        /// `known` when the claimed job file `workName` is still the file it was read from: the
        /// same inode, size and mtime (fstatat(2), one system call for open, fstat, read and
        /// close), a regular file with one link; nil otherwise, and it is read again.
        func stillReads(_ known: JobFileReader.Contents, as workName: String) -> JobFileReader.Contents? {
            guard let info = try? workHandle().status(workName), (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1,
                  UInt64(info.st_ino) == known.inode, Int(info.st_size) == known.bytes.count,
                  Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) == known.modified
            else { return nil }
            return known
        }

        /// `Spool.claim(_:from:)`; `now` (wall seconds) is the submission time of a state it writes.
        func claim(_ name: String, from folder: DirectoryHandle, state: StatusRecord? = nil, now: Int64) throws(SystemError) -> String? {
            let workFolder = try workHandle()
            for candidate in Spool.candidateNames(name) {
                // What recovery cannot learn from the work name is on disk before the job is:
                // its own name (claimed as `x.1.url`) and routing folder, or its released hints.
                let stated = state ?? (candidate == name ? nil
                    : StatusRecord(job: name, state: .queued, className: "default", priority: 0, agent: agentID,
                                   submitted: Timestamp.format(seconds: now)))
                let statePath = stated == nil ? nil : FileSystem.join(work, Spool.stateName(forJob: candidate))
                if let stated, let statePath { try AtomicFile.write(stated.encoded(), to: statePath, durable: false) }
                do {
                    try FileSystem.moveIntoPrivateFolder(folder.descriptor, name, workFolder.descriptor, candidate,
                                                         describing: FileSystem.join(folder.path, name), FileSystem.join(workFolder.path, candidate))
                    return candidate
                } catch where error.code == ENOENT {
                    if let statePath { try? FileSystem.removeIfPresent(statePath) }
                    return nil
                } catch where error.code == EEXIST {
                    if let statePath { try? FileSystem.removeIfPresent(statePath) }
                    continue
                } catch {
                    if let statePath { try? FileSystem.removeIfPresent(statePath) }
                    throw error
                }
            }
            throw SystemError(code: EEXIST, operation: "claim", path: FileSystem.join(folder.path, name))
        }

        /// `Spool.unclaim`.
        func unclaim(_ workName: String, to name: String, in folder: DirectoryHandle) throws(SystemError) {
            try workHandle().moveNoReplace(workName, to: folder, as: name)
        }

        /// `Spool.releasedState(named:in:)`.
        func releasedState(named name: String, in folder: DirectoryHandle, now: Int64) -> ReleasedState? {
            guard let file = try? folder.readUntrusted(Spool.releasedStateName(forJob: name), limit: StatusRecord.maxFileSize) else {
                return nil
            }
            return ReleasedState.parse(file.bytes, now: now)
        }

        /// The state a claim of job `name` from routing folder `folder` writes before it moves the
        /// job: the released hints (taken from the inbox), and the folder; nil when neither is there.
        func claimState(of name: String, from folder: String, hints: ReleasedState?, now: Int64) -> StatusRecord? {
            guard hints != nil || !folder.isEmpty else { return nil }
            var record = hints?.record(job: name, agent: agentID, now: now)
                ?? StatusRecord(job: name, state: .queued, className: "default", priority: 0, agent: agentID,
                                submitted: Timestamp.format(seconds: now))
            if !folder.isEmpty { record.folder = folder }
            return record
        }
    }

    /// What a claim reads of this spool, as it is now.
    var claiming: Claiming {
        Claiming(inbox: inbox, work: work, agentID: agentID, inboxFolder: inboxFolder, workFolder: workFolder,
                 crashPlan: crashPlan)
    }

    /// The routing folder `folder` (`""` for the inbox itself), walked from the inbox's descriptor
    /// with O_NOFOLLOW | O_DIRECTORY at each component: a routing folder replaced by a symlink is
    /// ELOOP or ENOTDIR, never followed out of the inbox.
    func routingFolder(_ folder: String) throws(SystemError) -> DirectoryHandle {
        try claiming.routingFolder(folder)
    }

    /// The work folder's handle, opened at `open()` (or now, for a spool that was not opened).
    func workHandle() throws(SystemError) -> DirectoryHandle {
        try claiming.workHandle()
    }

    /// A claimed job file in this agent's work folder, read through the folder's descriptor.
    func readClaimedJob(_ workName: String, limit: Int64) -> Result<JobFileReader.Contents, JobFileReader.Failure> {
        claiming.readClaimedJob(workName, limit: limit)
    }

    /// Moves a job from the inbox into this agent's work folder (renameat2(2) from the routing
    /// folder's descriptor, never replacing). Returns the name in work/, or nil when another agent
    /// took it first (ENOENT).
    ///
    /// Only this agent creates names in its work folder, so where RENAME_NOREPLACE is missing the
    /// claim is a rename(2) that only the source's arbitration matters for
    /// (`FileSystem.moveIntoPrivateFolder`), never link(2) + unlink(2).
    func claim(_ entry: InboxEntry) throws(SystemError) -> String? {
        let folder: DirectoryHandle
        do {
            folder = try routingFolder(entry.folder)
        } catch where error.code == ENOENT {
            return nil
        }
        return try claim(entry.name, from: folder)
    }

    func claim(_ name: String, from folder: DirectoryHandle) throws(SystemError) -> String? {
        try claiming.claim(name, from: folder, now: Int64(time(nil)))
    }

    /// Puts a claimed job back into its routing folder under its inbox name, never replacing:
    /// a claim whose job file could not be read for want of descriptors is tried again later.
    func unclaim(_ workName: String, to name: String, in folder: DirectoryHandle) throws(SystemError) {
        try claiming.unclaim(workName, to: name, in: folder)
    }

    /// The hidden state file that `release` puts beside a job in the inbox (`.x.state.json`).
    static func releasedStateName(forJob name: String) -> String { "." + stateName(forJob: name) }

    /// `releasedStateName` of the job at `relativePath` in the inbox, relative to the inbox too.
    static func releasedStatePath(forJob relativePath: String) -> String {
        let entry = InboxEntry(relativePath: relativePath, modified: 0)
        let name = releasedStateName(forJob: entry.name)
        return entry.folder.isEmpty ? name : FileSystem.join(entry.folder, name)
    }

    /// Whether `name` is a released state's (`.x.state.json`), as opposed to its temp file's.
    static func isReleasedStateName(_ name: String) -> Bool {
        name.utf8.count > 12 && name.hasPrefix(".") && name.hasSuffix(".state.json")
    }

    /// The hints a released job brought back to the inbox (`ReleasedState`), if any; read
    /// through the routing folder's descriptor, without blocking.
    func releasedState(of relativePath: String, now: Int64) -> ReleasedState? {
        let entry = InboxEntry(relativePath: relativePath, modified: 0)
        guard let folder = try? routingFolder(entry.folder) else { return nil }
        return claiming.releasedState(named: entry.name, in: folder, now: now)
    }
}
