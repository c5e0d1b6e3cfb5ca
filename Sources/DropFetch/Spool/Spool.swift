import Glibc

/// The spool folders of docs/spool.md and the moves between them: claim, file, adopt.
final class Spool {
    /// A job file seen in the inbox.
    struct InboxEntry: Sendable, Equatable {
        /// Path relative to the inbox, e.g. `urgent/x.url`.
        var relativePath: String
        /// The subfolder (routing key), empty at the top level.
        var folder: String { FileSystem.directoryName(of: relativePath) == "." ? "" : FileSystem.directoryName(of: relativePath) }
        var name: String { FileSystem.baseName(of: relativePath) }
        /// Modification time in nanoseconds, for start-up arrival order.
        var modified: Int64
    }

    enum Outcome: String, Sendable { case done, failed }

    let root: String
    let agentID: String
    let durable: Bool
    let inbox: String
    let hold: String
    let done: String
    let failed: String
    let work: String
    let workRoot: String
    private var lock: FileDescriptor?
    /// Seals the resume records (RecordKey): the agent's, set when it starts; nil in a control
    /// command that cannot read it (it cannot check a record's seal then).
    var recordKey: RecordKey?
    /// The next record number to try per `folder/job name`, so that many records of one name do
    /// not probe from 1 each time.
    private var nextRecordNumber: [String: Int] = [:]
    private var folderHandles: [String: DirectoryHandle] = [:]
    /// The inbox and this agent's work folder, opened by `open()` and never replaced: the claim
    /// worker reads them while the loop runs.
    private(set) var inboxFolder: DirectoryHandle?
    private(set) var workFolder: DirectoryHandle?
    /// Routing folders found deeper than `InboxScan.maxDepth` and already reported.
    var reportedDeepFolders: Set<String> = []
    var crashPlan: CrashPlan?

    init(root: String, agentID: String, durable: Bool) {
        self.root = root
        self.agentID = agentID
        self.durable = durable
        inbox = root + "/inbox"
        hold = root + "/hold"
        done = root + "/done"
        failed = root + "/failed"
        workRoot = root + "/work"
        work = workRoot + "/" + agentID
    }

    /// Creates missing folders and takes this agent's `work/<agent>/.lock` (flock(2)).
    func open() throws(SpoolError) {
        do {
            for folder in [inbox, hold, done, failed, work] { try FileSystem.makeDirectories(folder) }
            let file = try FileDescriptor.open(work + "/.lock", flags: O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o644)
            guard try Spool.lockAllowingProbes(file) else {
                throw SpoolError.agentRunning(agentID, work)
            }
            lock = file
            inboxFolder = try DirectoryHandle.openRoot(inbox, create: false)
            workFolder = try DirectoryHandle.openRoot(work, create: false)
            guard access(root, W_OK) == 0, access(work, W_OK) == 0 else {
                throw SystemError.current("access (write)", work)
            }
        } catch let error as SpoolError {
            throw error
        } catch let error as SystemError {
            throw SpoolError.unusable(error)
        } catch {
            throw SpoolError.unusable(SystemError(code: EIO, operation: "\(error)"))
        }
    }

    /// Takes a work folder's flock(2), trying for up to half a second: an agent checking whether
    /// this one is dead (`adoptOrphans`) holds the lock for a moment, a live agent for good.
    private static func lockAllowingProbes(_ file: FileDescriptor) throws(SystemError) -> Bool {
        for _ in 0..<50 {
            if try file.tryLockExclusive() { return true }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            _ = nanosleep(&pause, nil)
        }
        return false
    }

    /// A job file's name: not hidden, ending in `.url` in any case (`X.URL` from a Windows share), with a stem.
    static func isJobName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard bytes.count > 4, bytes.first != UInt8(ascii: ".") else { return false }
        let suffix = bytes.suffix(4)
        return suffix.first == UInt8(ascii: ".")
            && FileName.asciiLowercased(String(decoding: suffix.dropFirst(), as: UTF8.self)) == "url"
    }

    /// `x.url`, `x.1.url`, `x.2.url`, …: record names that never overwrite (invariant 5).
    ///
    /// A stem over 200 bytes is shortened (`FileName.shortened`) so that `<stem>.N.status.json` and
    /// its temp file fit NAME_MAX; the status file's `job` keeps the name as dropped.
    static func candidateNames(_ name: String) -> some Sequence<String> {
        (0..<100_000).lazy.map { candidateName(name, number: $0) }
    }

    static func candidateName(_ name: String, number: Int) -> String {
        let stem = FileName.shortened(String(name.dropLast(4)), maxBytes: 200)
        return number == 0 ? stem + ".url" : "\(stem).\(number).url"
    }

    static func statusName(forJob name: String) -> String {
        String(name.dropLast(4)) + ".status.json"
    }

    static func stateName(forJob name: String) -> String {
        String(name.dropLast(4)) + ".state.json"
    }

    /// A status file written under a temp name in the staging folder: not yet durable, not in place.
    struct StagedStatus {
        let temp: String
        let status: StatusRecord
        let outcome: Outcome
        /// The job file's inode when the status was staged: only that file is filed with it.
        let sourceInode: UInt64
    }

    /// First step of filing, planned: where the status file for the job file at `source` is staged,
    /// a temp name in `staging` (default: done/ or failed/). The caller writes it there
    /// (`stageStatus`); `fileStaged` puts it in place once durable.
    func planStatus(_ status: StatusRecord, as outcome: Outcome, for source: String,
                    stagingIn staging: String? = nil) throws(SystemError) -> StagedStatus {
        let sourceInode = UInt64(try FileSystem.lstatus(source).st_ino)
        let temp = Spool.stagedStatusPath(for: source, in: staging ?? (outcome == .done ? done : failed))
        return StagedStatus(temp: temp, status: status, outcome: outcome, sourceInode: sourceInode)
    }

    /// The temp name in `folder` under which the status of the job file at `source` is staged.
    static func stagedStatusPath(for source: String, in folder: String) -> String {
        AtomicFile.tempPath(for: folder + "/" + Spool.statusName(forJob: FileSystem.baseName(of: source)))
    }

    /// First step of filing, done here: the planned status written (O_EXCL) and, when the spool is
    /// durable, fsynced.
    func stageStatus(_ status: StatusRecord, as outcome: Outcome, for source: String,
                     stagingIn staging: String? = nil) throws(SystemError) -> StagedStatus {
        let staged = try planStatus(status, as: outcome, for: source, stagingIn: staging)
        try AtomicFile.writeTemp(status.encoded(), at: staged.temp, mode: 0o644, durable: durable)
        return staged
    }

    /// Second step: the staged status renamed beside the job's record name in done/ or failed/
    /// (`x.url`, else `x.1.url`, …, never replacing), then the job file at `source` beside it.
    /// Returns the job file's new path; the folders are not synced (`filedFolders`). A job file
    /// that is gone, or another file now under its name, is ENOENT: nothing is moved.
    ///
    /// `statusWritten` runs once the status file is in place, before the job file moves: what it
    /// cleans up is then no longer needed by recovery, which completes the filing from the status.
    func fileStaged(_ staged: StagedStatus, from source: String, statusWritten: () -> Void = {}) throws(SystemError) -> String {
        let folder = staged.outcome == .done ? done : failed
        let filed = try Spool.fileStaged(staged, from: source, into: folder,
                                         firstFree: knownFreeRecordNumber(for: staged.status.job, in: folder),
                                         crashPlan: crashPlan, statusWritten: statusWritten)
        noteFiled(filed)
        return filed.jobPath
    }

    /// Where a filing ended: the job file's new path, and the record number after it in its folder.
    struct Filed: Sendable {
        let jobPath: String
        let key: String
        let nextNumber: Int
    }

    /// `fileStaged` without the spool's memory of record numbers, so that the group commit's worker
    /// can run it (`SpoolFiling`): `firstFree` is the number known free last time, if any; the
    /// caller hands the result to `noteFiled`.
    static func fileStaged(_ staged: StagedStatus, from source: String, into folder: String, firstFree: Int?,
                           crashPlan: CrashPlan?, statusWritten: () -> Void) throws(SystemError) -> Filed {
        let job = staged.status.job
        guard (try? FileSystem.lstatus(source)).map({ UInt64($0.st_ino) == staged.sourceInode }) == true else {
            throw SystemError(code: ENOENT, operation: "file (the job file left or was replaced)", path: source)
        }
        var number = firstFree ?? firstFreeRecordNumber(for: job, in: folder)
        // A number just found free is not looked up again: the renames below never replace.
        var probed = firstFree == nil
        while number < 100_000 {
            let candidate = Spool.candidateName(job, number: number)
            number += 1
            let statusPath = folder + "/" + Spool.statusName(forJob: candidate)
            let jobPath = folder + "/" + candidate
            if !probed, FileSystem.exists(statusPath) || FileSystem.exists(jobPath) { continue }
            probed = false
            do {
                try FileSystem.renameNoReplace(staged.temp, to: statusPath)
            } catch where error.code == EEXIST {
                continue
            }
            statusWritten()
            crashPlan?.reach(.statusWritten)
            do {
                try FileSystem.renameNoReplace(source, to: jobPath)
            } catch {
                // The status goes back to its temp name: tried again under the next name, or removed by the caller.
                if (try? FileSystem.rename(statusPath, to: staged.temp)) == nil { try? FileSystem.unlink(statusPath) }
                if error.code == EEXIST { continue }
                throw error
            }
            return Filed(jobPath: jobPath, key: folder + "/" + job, nextNumber: number)
        }
        throw SystemError(code: EEXIST, operation: "file", path: source)
    }

    /// Remembers the next free record number after a filing, so that the next job of that name
    /// does not probe the numbers again.
    func noteFiled(_ filed: Filed) {
        nextRecordNumber[filed.key] = max(nextRecordNumber[filed.key] ?? 0, filed.nextNumber)
    }

    /// The record number a filing of `job` into `folder` starts probing at, if known.
    func knownFreeRecordNumber(for job: String, in folder: String) -> Int? {
        nextRecordNumber[folder + "/" + job]
    }

    /// Removes a staged status that was not filed.
    func discard(_ staged: StagedStatus) {
        try? FileSystem.removeIfPresent(staged.temp)
    }

    /// The folders whose fsync makes a filing from `source` durable: done/ or failed/, and the source's folder.
    func filedFolders(_ outcome: Outcome, from source: String) throws(SystemError) -> [DirectoryHandle] {
        [try folderHandle(outcome == .done ? done : failed), try folderHandle(FileSystem.directoryName(of: source))]
    }

    /// An open handle on one of the spool's folders, opened again when the path names another
    /// folder now (done/ rotated by an admin), so that a sync never goes to the wrong one.
    func folderHandle(_ path: String) throws(SystemError) -> DirectoryHandle {
        if let open = folderHandles[path], let now = try? FileSystem.lstatus(path),
           UInt64(now.st_ino) == open.inode, UInt64(now.st_dev) == open.device {
            return open
        }
        let handle = try DirectoryHandle.openRoot(path, create: false)
        folderHandles[path] = handle
        return handle
    }

    /// The finish protocol in one call, for the commands (`cancel`): the status staged in `staging`,
    /// synced, put in place with the job file beside it, then both folders synced.
    @discardableResult
    func file(path source: String, as outcome: Outcome, status: StatusRecord,
              stagingIn staging: String? = nil, statusWritten: () -> Void = {}) throws(SystemError) -> String {
        let staged = try stageStatus(status, as: outcome, for: source, stagingIn: staging)
        let jobPath: String
        do {
            jobPath = try fileStaged(staged, from: source, statusWritten: statusWritten)
        } catch {
            discard(staged)
            throw error
        }
        if durable {
            try FileSystem.syncDirectory(FileSystem.directoryName(of: jobPath))
            try FileSystem.syncDirectory(FileSystem.directoryName(of: source))
        }
        return jobPath
    }

    /// The lowest record number (`x.N.url`) worth trying: remembered from the last filing of this
    /// name, else found by doubling then bisecting over the names in use (records are only added),
    /// so that filing the n-th record of one name costs O(log n) lookups, not n.
    private static func firstFreeRecordNumber(for job: String, in folder: String) -> Int {
        func taken(_ number: Int) -> Bool {
            let name = Spool.candidateName(job, number: number)
            return FileSystem.exists(folder + "/" + name) || FileSystem.exists(folder + "/" + Spool.statusName(forJob: name))
        }
        guard taken(0) else { return 0 }
        var low = 0
        var high = 1
        while high < 100_000, taken(high) {
            low = high
            high *= 2
        }
        while high - low > 1 {
            let middle = (low + high) / 2
            if taken(middle) { low = middle } else { high = middle }
        }
        return low + 1
    }

    /// Where a job that left a work folder is now, if anywhere in the spool.
    enum Place: String, Sendable { case inbox, hold, done, failed }

    func whereIs(job: String, workName: String, folder: String) -> Place? {
        let sub = folder.isEmpty ? "" : "/" + folder
        for name in Set([job, workName]) {
            if FileSystem.exists(hold + sub + "/" + name) || FileSystem.exists(hold + "/" + name) { return .hold }
            if FileSystem.exists(inbox + sub + "/" + name) { return .inbox }
        }
        if FileSystem.exists(failed + "/" + workName) || FileSystem.exists(failed + "/" + job) { return .failed }
        if FileSystem.exists(done + "/" + workName) || FileSystem.exists(done + "/" + job) { return .done }
        return nil
    }

    /// A job file in this agent's work folder with a second link (st_nlink 2) is a move that
    /// link(2) + unlink(2) began and a crash interrupted: the claim (twin in the inbox) or the
    /// filing (twin in done/ or failed/) is completed. Returns whether one was found.
    func completeInterruptedMove(of workName: String, folder: String, job: String) -> Bool {
        let path = work + "/" + workName
        guard let info = try? FileSystem.lstatus(path), info.st_nlink > 1 else { return false }
        func same(_ other: String) -> Bool {
            guard let twin = try? FileSystem.lstatus(other) else { return false }
            return twin.st_ino == info.st_ino && twin.st_dev == info.st_dev
        }
        let sub = folder.isEmpty ? "" : folder + "/"
        for name in Set([workName, job]) where same(inbox + "/" + sub + name) {
            try? FileSystem.unlink(inbox + "/" + sub + name)
            return true
        }
        for outcome in [done, failed] {
            for candidate in Spool.candidateNames(job).prefix(1000) where same(outcome + "/" + candidate) {
                try? FileSystem.unlink(path)
                try? FileSystem.removeIfPresent(statePath(for: workName))
                return true
            }
        }
        return false
    }

    /// A status or state file of the spool, read without blocking or following a symlink
    /// (`UntrustedFile`): the spool is shared with peers.
    func readRecord(at path: String) -> StatusRecord? {
        Spool.readRecord(at: path)
    }

    static func readRecord(at path: String) -> StatusRecord? {
        guard let file = try? UntrustedFile.read(atPath: path, limit: StatusRecord.maxFileSize) else { return nil }
        return StatusRecord.decode(file.bytes)
    }

    /// Removes dot-temp files (`.x.tmp`, `.x.status.json.123.tmp`) left in the spool folders by writers
    /// or by a crash, once they are older than `age` seconds. Returns how many were removed.
    @discardableResult
    func removeStaleTemporaries(olderThan age: Int64 = 86_400) -> Int {
        let now = Int64(time(nil))
        var removed = 0
        var folders = [inbox, hold, done, failed, work]
        var index = 0
        while index < folders.count {
            let folder = folders[index]
            index += 1
            for entry in (try? FileSystem.entries(of: folder)) ?? [] {
                let path = folder + "/" + entry.name
                if folder.hasPrefix(inbox), !entry.name.hasPrefix("."),
                   entry.isDirectory ?? FileSystem.isDirectory(path), folders.count < 10_000 {
                    folders.append(path)
                    continue
                }
                guard entry.name.hasPrefix("."), entry.name.hasSuffix(".tmp"),
                      let info = try? FileSystem.lstatus(path), (info.st_mode & S_IFMT) == S_IFREG,
                      now - Int64(info.st_mtim.tv_sec) > age else { continue }
                if (try? FileSystem.unlink(path)) != nil { removed += 1 }
            }
        }
        return removed
    }

    /// Removes what a dead run left in a work folder whose lock this agent holds: temp files of
    /// interrupted atomic writes, and state files of jobs that were filed before the crash.
    func removeLeftovers(in folder: String) {
        for entry in (try? FileSystem.entries(of: folder)) ?? [] {
            let name = entry.name
            let isTemp = name.hasPrefix(".") && name.hasSuffix(".tmp")
            let isOrphanState = name.hasSuffix(".state.json")
                && !FileSystem.exists(folder + "/" + String(name.dropLast(".state.json".count)) + ".url")
            if isTemp || isOrphanState { try? FileSystem.removeIfPresent(folder + "/" + name) }
        }
    }

    /// Job files in this agent's work folder, left by an earlier run of it.
    func ownJobs() -> [String] {
        ((try? FileSystem.entries(of: work)) ?? []).map(\.name).filter(Spool.isJobName).sorted()
    }

    /// Moves the jobs of dead agents (whose `.lock` can be taken) into this agent's work folder.
    /// A job whose status file the dead agent had already written is filed beside it instead
    /// (only the dead agent's own records are recognised: see `unfinishedFiling`) and its name
    /// appended to `completed`.
    func adoptOrphans(completed: inout [String]) -> [String] {
        var adopted: [String] = []
        let agents = ((try? FileSystem.entries(of: workRoot)) ?? []).map(\.name)
        for other in agents where other != agentID && !other.hasPrefix(".") {
            let folder = workRoot + "/" + other
            guard let lockFile = try? FileDescriptor.open(folder + "/.lock", flags: O_RDWR | O_NOFOLLOW),
                  (try? lockFile.tryLockExclusive()) == true else { continue }
            let names = ((try? FileSystem.entries(of: folder)) ?? []).map(\.name)
            for name in names where Spool.isJobName(name) {
                let job = readState(for: name, in: folder)?.job ?? name
                let claim = (try? FileSystem.lstatus(folder + "/" + name)).map { UInt64($0.st_ino) } ?? 0
                if let unfinished = unfinishedFiling(of: name, job: job, by: other),
                   (try? completeFiling(name, to: unfinished.jobPath, from: folder)) != nil {
                    removeResumeRecords(filedAt: unfinished.jobPath, owner: PartOwner(job: job, claim: claim))
                    completed.append(job)
                    continue
                }
                for candidate in Spool.candidateNames(name) {
                    do {
                        // A move into this agent's own folder, as a claim is: never a second link
                        // that a crash would leave in the dead agent's folder, which no recovery
                        // looks for (`completeInterruptedMove` knows inbox, done and failed twins).
                        try FileSystem.moveIntoPrivateFolder(folder + "/" + name, to: work + "/" + candidate)
                        let state = folder + "/" + Spool.stateName(forJob: name)
                        try? FileSystem.rename(state, to: statePath(for: candidate))
                        adopted.append(candidate)
                        break
                    } catch where error.code == EEXIST {
                        continue
                    } catch {
                        break
                    }
                }
            }
            removeLeftovers(in: folder)
        }
        return adopted
    }

    func adoptOrphans() -> [String] {
        var completed: [String] = []
        return adoptOrphans(completed: &completed)
    }

    /// A status file in done/ or failed/ that names this job but has no job file beside it: a run
    /// stopped between writing the status and moving the job. Returns where the job belongs.
    /// `agent` is the agent whose work folder holds the job (default: this one).
    ///
    /// The record must be no older than the job's claim (the work file's ctime, which rename(2)
    /// sets): a failed job moved back to the inbox by hand leaves its old record behind, and that
    /// record must not send the new attempt straight back to failed/.
    func unfinishedFiling(of workName: String, job: String, by agent: String? = nil) -> (outcome: Outcome, jobPath: String)? {
        let workFolder = agent.map { workRoot + "/" + $0 } ?? work
        guard let claimed = try? FileSystem.lstatus(workFolder + "/" + workName) else { return nil }
        let claimTime = Int64(claimed.st_ctim.tv_sec)
        for outcome in [Outcome.done, .failed] {
            let folder = outcome == .done ? done : failed
            for candidate in Spool.candidateNames(job) {
                let statusPath = folder + "/" + Spool.statusName(forJob: candidate)
                guard FileSystem.exists(statusPath) else { break }
                if FileSystem.exists(folder + "/" + candidate) { continue }
                guard let record = readRecord(at: statusPath), record.job == job, record.agent == (agent ?? agentID),
                      let finished = record.finished.flatMap(Timestamp.parse), finished >= claimTime else { continue }
                return (outcome, folder + "/" + candidate)
            }
        }
        return nil
    }

    /// Removes the resume records a job filed at `jobPath` left beside its files (PartFile.removeRecords).
    func removeResumeRecords(filedAt jobPath: String, owner: PartOwner) {
        let statusPath = FileSystem.directoryName(of: jobPath) + "/" + Spool.statusName(forJob: FileSystem.baseName(of: jobPath))
        if let filed = readRecord(at: statusPath) { PartFile.removeRecords(of: filed, owner: owner, key: recordKey) }
    }

    /// Completes a filing found by `unfinishedFiling(of:job:)`.
    func completeFiling(_ workName: String, to jobPath: String, from folder: String? = nil) throws(SystemError) {
        let folder = folder ?? work
        try FileSystem.renameNoReplace(folder + "/" + workName, to: jobPath)
        try? FileSystem.removeIfPresent(folder + "/" + Spool.stateName(forJob: workName))
        if durable {
            try FileSystem.syncDirectory(FileSystem.directoryName(of: jobPath))
            try FileSystem.syncDirectory(folder)
        }
    }

    /// Replaces a running job's state file: progress for `status`, and the chosen file names, attempts
    /// and retry schedule for a restart.
    ///
    /// Not fsynced: a state file is advice (progress, attempts, routing folder, retry time). What a
    /// restart must get right comes from the job file, the `.part` and its resume record, so a
    /// state lost to a power cut costs at most an attempt count or an early retry.
    /// `work/<agent>/.<job>.state.json`.
    func statePath(for workName: String) -> String {
        work + "/" + Spool.stateName(forJob: workName)
    }

    func readState(for workName: String, in folder: String? = nil) -> StatusRecord? {
        readRecord(at: (folder ?? work) + "/" + Spool.stateName(forJob: workName))
    }
}

/// Why the spool cannot be used (exit code 3).
public enum SpoolError: Error, Sendable, CustomStringConvertible {
    case unusable(SystemError)
    case agentRunning(String, String)

    public var description: String {
        switch self {
        case .unusable(let error): return "spool not usable: \(error)"
        case .agentRunning(let agent, let folder):
            return "another agent with agent_id '\(agent)' is running (\(folder)/.lock is held)"
        }
    }
}
