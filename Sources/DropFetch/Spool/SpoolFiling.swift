import Glibc

/// One job's filing moves as a single step on a worker, in a `JobFinish` (docs/spool.md, finish
/// protocol): its durable status renamed from its temp name in the work folder into done/ or failed/
/// (`Spool.fileStaged`), the job file beside it, and its state file removed. On a busy disk each
/// rename can wait milliseconds for a folder block under write I/O, which on the loop stalled
/// every transfer. The status is written before (`temp`), the folders synced after.
/// A class of constants: a batch's items and their endings pass it along with one retain, where
/// the struct it was (its record key, paths and lists) was copied field by field five times a job.
final class SpoolFiling: WorkerRequest {
    /// How the filing ended.
    enum Ending: Sendable {
        case filed(Spool.Filed)
        /// The job file left the work folder (hold, mv) or was replaced before it was filed:
        /// nothing was moved and the staged status is gone.
        case left
        /// A step failed (ENOSPC, EIO): nothing was moved and the staged status is gone.
        case failed(SystemError)
    }

    /// The job file in the work folder.
    let source: String
    /// The record as planned on the loop; a published part's final name is set into a copy of it
    /// on the worker (`JobFinish`), which files that copy (`perform(recording:)`).
    let status: StatusRecord
    let outcome: Spool.Outcome
    /// Where the status is written first (in the work folder, beside the job file).
    let temp: String
    /// The job file's inode when it was claimed (0: look it up here): another file under its name is not this job.
    let claim: UInt64
    let folder: String
    let firstFree: Int?
    /// The job's state file, removed once filed; nil when it never had one.
    let statePath: String?
    let crashPlan: CrashPlan?
    /// The resume records left beside published files: removed once the status is in place
    /// (recovery then completes the filing from the status), restored by the loop if the job left.
    let publishedRecords: [(folder: DirectoryHandle, name: String)]
    /// The part of the download whose completion this filing ends (`JobFinish`), still
    /// open, and its folder: its owner mark is removed through it once the job is filed.
    let markedPart: (file: FileDescriptor, download: Int, folder: DirectoryHandle)?
    /// Checks the owner marks of the job's other published files before they are removed.
    let key: RecordKey?
    /// Told of the filing once the job file is in place (the recent view, RecentFilings).
    let journal: FilingJournal
    /// Told of the URLs a job filed into done/ fetched (duplicates).
    let doneIndex: DoneIndex
    /// The URL each finished download was fetched from, as written in the job file (credentials
    /// included: only its key goes to the index), for `doneIndex`.
    let fetchedURLs: [String]
    /// The agent clock's wall time when the filing was planned (ns): the journal line's time.
    let filedAt: Int64

    /// The filing of the job file at `source` under `status`, planned on the loop (the record
    /// numbers the spool remembers are the loop's).
    /// `workName`, when given, is the job file's name in the spool's work folder (`source`), so
    /// that neither is taken out of `source` again.
    init(_ status: StatusRecord, as outcome: Spool.Outcome, from source: String, named workName: String? = nil,
         claim: UInt64, in spool: Spool,
         publishedRecords: [(folder: DirectoryHandle, name: String)], removesState: Bool = true,
         markedPart: (file: FileDescriptor, download: Int, folder: DirectoryHandle)? = nil, fetchedURLs: [String] = [],
         filedAt: Int64) {
        self.source = source
        self.status = status
        self.outcome = outcome
        let name = workName ?? FileSystem.baseName(of: source)
        temp = Spool.stagedStatusPath(forJobNamed: name, in: workName == nil ? FileSystem.directoryName(of: source) : spool.work)
        self.claim = claim
        folder = outcome == .done ? spool.done : spool.failed
        firstFree = spool.knownFreeRecordNumber(for: status.job, in: folder)
        statePath = removesState ? spool.statePath(for: name) : nil
        crashPlan = spool.crashPlan
        self.publishedRecords = publishedRecords
        self.markedPart = markedPart
        key = spool.recordKey
        journal = spool.journal
        doneIndex = spool.doneIndex
        self.fetchedURLs = fetchedURLs
        self.filedAt = filedAt
    }

    func perform() -> Ending {
        perform(recording: status)
    }

    /// Files the job under `status`: the planned record, or a copy of it naming a part published since.
    func perform(recording status: StatusRecord) -> Ending {
        var inode = claim
        if inode == 0 {
            do {
                inode = UInt64(try FileSystem.lstatus(source).st_ino)
            } catch {
                try? FileSystem.removeIfPresent(temp)
                return error.code == ENOENT ? .left : .failed(error)
            }
        }
        let staged = Spool.StagedStatus(temp: temp, status: status, outcome: outcome, sourceInode: inode)
        let owner = PartOwner(job: status.job, claim: inode)
        var unmarked: [FileDescriptor] = []
        do {
            let filed = try Spool.fileStaged(staged, from: source, into: folder, firstFree: firstFree, crashPlan: crashPlan) {
                for (folder, name) in publishedRecords { try? folder.removeIfPresent(name) }
                unmarked += removeOwnerMarks(of: owner, downloads: status.downloads)
            }
            let name = filed.name
            journal.append(name: name, outcome: outcome, at: filedAt)
            if outcome == .done { doneIndex.append(keys: fetchedURLs.map(URLKey.key), name: name) }
            if let statePath { try? FileSystem.removeIfPresent(statePath) }
            return .filed(filed)
        } catch {
            // Not filed after all: the files are still the job's (the loop puts its records back).
            if let key { for file in unmarked { PartFile.restoreMark(on: file, owner: owner, key: key) } }
            try? FileSystem.removeIfPresent(temp)
            let stillHere = (try? FileSystem.lstatus(source)).map { UInt64($0.st_ino) == inode } ?? false
            return error.code == ENOENT && !stillHere ? .left : .failed(error)
        }
    }

    /// The owner marks (OwnerMark) of the job's published files, removed with its records once
    /// its status is in place (a crash after that is completed by recovery from the status,
    /// which removes what is left: PartFile.removeRecords): from then on the files are no
    /// job's, and a job file that gets this one's inode again under its name is another job.
    /// The completing part's through its descriptor (one fremovexattr(2)); the others'
    /// (published earlier, or found finished) by name, each only if its mark is this job's.
    /// Returns the files whose marks it removed, still open.
    private func removeOwnerMarks(of owner: PartOwner, downloads: [DownloadStatus]) -> [FileDescriptor] {
        var unmarked: [FileDescriptor] = []
        for (index, download) in downloads.enumerated() where download.state == .done {
            if let markedPart, markedPart.download == index {
                // Where the part's folder keeps no user attribute, its owner was in its record alone.
                guard !markedPart.folder.refusesUserAttributes else { continue }
                do {
                    try markedPart.file.removeAttribute(OwnerMark.attribute)
                    unmarked.append(markedPart.file)
                } catch {
                    if OwnerMark.refusesFolder(error) { markedPart.folder.noteUserAttributesRefused() }
                }
            } else if let file = download.file, let opened = PartFile.removeMark(ofPublished: file, owner: owner, key: key) {
                unmarked.append(opened)
            }
        }
        return unmarked
    }
}
