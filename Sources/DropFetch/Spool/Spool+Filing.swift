import Glibc

/// Filing (docs/spool.md, finish protocol): a status staged under a temp name, put in place in
/// done/ or failed/ under the first free record number, the job file beside it, both folders synced.
extension Spool {
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
        stagedStatusPath(forJobNamed: FileSystem.baseName(of: source), in: folder)
    }

    /// The same for the job file named `name`.
    static func stagedStatusPath(forJobNamed name: String, in folder: String) -> String {
        AtomicFile.tempPath(in: folder, for: Spool.statusName(forJob: name))
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
        journal.append(name: filed.name, outcome: staged.outcome)
        return filed.jobPath
    }

    /// Where a filing ended: the job file's new path, and the record number after it in its folder.
    struct Filed: Sendable {
        let jobPath: String
        /// The job file's name in `folder` (its record's name).
        let name: String
        /// The folder and the job's name, joined into the key of `nextRecordNumber` only when a
        /// number is remembered (`noteFiled`): most names are filed once.
        let folder: String
        let job: String
        let nextNumber: Int

        var key: String { FileSystem.join(folder, job) }
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
        // The number known free last time is a hint: the job's own name may have been freed since
        // (a retry moved the record's job back, a person moved it), and is then taken again rather
        // than a number past it (issue 36: a retried job came back as x.1.url, then x.1.1.url).
        var number = firstFree.map { known in
            known > 0 && !FileSystem.exists(FileSystem.join(folder, Spool.candidateName(job, number: 0))) ? 0 : known
        } ?? 0
        // Without a number known, the job's own name is tried first, and only when it is taken are
        // the numbers searched (`firstFreeRecordNumber`); a number found free so is not looked up
        // again: the renames below never replace.
        var searched = firstFree != nil
        var probed = false
        while number < 100_000 {
            let candidate = Spool.candidateName(job, number: number)
            number += 1
            let jobPath = FileSystem.join(folder, candidate)
            // A status without its job file (a filing a crash interrupted) makes the rename
            // below fail with EEXIST, so only the job file is looked up.
            if !probed, FileSystem.exists(jobPath) {
                if !searched {
                    searched = true
                    number = firstFreeRecordNumber(for: job, in: folder)
                    probed = true
                }
                continue
            }
            probed = false
            let statusPath = FileSystem.join(folder, Spool.statusName(forJob: candidate))
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
            return Filed(jobPath: jobPath, name: candidate, folder: folder, job: job, nextNumber: number)
        }
        throw SystemError(code: EEXIST, operation: "file", path: source)
    }

    /// Remembers the next free record number after a filing, so that the next job of that name
    /// does not probe the numbers again.
    /// A name filed for the first time (next number 1) is not kept: its next filing looks name 0
    /// up either way, and keeping every name filed grew a table by a job for ever.
    func noteFiled(_ filed: Filed) {
        guard filed.nextNumber > 1 || !nextRecordNumber.isEmpty else { return }
        let key = filed.key
        guard filed.nextNumber > 1 || nextRecordNumber[key] != nil else { return }
        nextRecordNumber[key] = max(nextRecordNumber[key] ?? 0, filed.nextNumber)
    }

    /// The record number a filing of `job` into `folder` starts probing at, if known.
    func knownFreeRecordNumber(for job: String, in folder: String) -> Int? {
        nextRecordNumber.isEmpty ? nil : nextRecordNumber[FileSystem.join(folder, job)]
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
    /// The path is looked at again at most once a second: a filing per job each looking twice
    /// cost two system calls a job, for a rotation an admin makes once a day.
    func folderHandle(_ path: String) throws(SystemError) -> DirectoryHandle {
        let now = MonotonicClock.now()
        if let (open, checked) = folderHandles[path] {
            if now - checked < 1000 { return open }
            if let current = try? FileSystem.lstatus(path), UInt64(current.st_ino) == open.inode,
               UInt64(current.st_dev) == open.device {
                folderHandles[path] = (open, now)
                return open
            }
        }
        let handle = try DirectoryHandle.openRoot(path, create: false)
        folderHandles[path] = (handle, now)
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
    static func firstFreeRecordNumber(for job: String, in folder: String) -> Int {
        // A number whose status is there without its job file is found taken by the rename.
        func taken(_ number: Int) -> Bool {
            FileSystem.exists(FileSystem.join(folder, Spool.candidateName(job, number: number)))
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
}
