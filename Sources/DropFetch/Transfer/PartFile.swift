import CLinux
import Glibc

/// A download's hidden `.<file>.part` and its resume record, reached through the folder's
/// descriptor. Holding one means owning the name: it was created with O_EXCL for its owner job,
/// or reopened because its record names that job (docs/spool.md, invariant 6).
final class PartFile {
    /// How `reserve` ended.
    enum Reservation {
        case ours(PartFile)
        /// Another job (named, or "another process") owns the name.
        case taken(by: String)
    }

    let folder: DirectoryHandle
    /// The final name the data will be published under.
    let finalName: String
    /// `.<finalName>.part`, the final name shortened to 200 bytes first so that the part, its
    /// record and the record's temp file fit NAME_MAX.
    let name: String
    let file: FileDescriptor
    private(set) var record: ResumeRecord
    private let durable: Bool
    /// Bytes known to be in the file and valid (the writer keeps it current).
    var size: Int64
    /// How many times the data was cut back (truncate): a sync asked for before a cut proves nothing after it.
    private(set) var cuts = 0
    /// Takes the record a rewrite replaced, still open, to close it elsewhere (off the event loop:
    /// freeing its blocks can wait for the disk); nil frees it here.
    var releaseReplacedRecord: ((FileDescriptor) -> Void)?

    var recordName: String { ResumeRecord.name(forPart: name) }
    var path: String { folder.path + "/" + name }
    var finalPath: String { folder.path + "/" + finalName }

    private init(folder: DirectoryHandle, finalName: String, name: String, file: FileDescriptor,
                 record: ResumeRecord, size: Int64, durable: Bool) {
        self.folder = folder
        self.finalName = finalName
        self.name = name
        self.file = file
        self.record = record
        self.size = size
        self.durable = durable
    }

    static func partName(for finalName: String) -> String {
        "." + FileName.shortened(finalName, maxBytes: 200) + ".part"
    }

    /// Takes the `.part` of `finalName` for `owner`: created with O_EXCL (openat(2)) and its record
    /// written, or reopened when its record names this owner. `adoptUnrecorded` takes a part that
    /// has no readable record (a power loss before it reached the disk) when the owner's own state
    /// names this file. Anything planted under the name that is not a plain file is unlinked.
    ///
    /// Where the spool is shared through a network file system, another agent's part can come and
    /// go under the name while it is looked at (and a GlusterFS mount shows a name another mount
    /// removed or replaced for up to a second): a name that still changes after four looks is
    /// reported `taken`, so that the caller moves on as `on_conflict` says (as it does when
    /// something keeps planting files under the name), rather than failing the job.
    static func reserve(_ finalName: String, in folder: DirectoryHandle, for owner: PartOwner, mode: UInt32,
                        durable: Bool, adoptUnrecorded: Bool = false) throws(SystemError) -> Reservation {
        let name = partName(for: finalName)
        for _ in 0..<4 {
            let file: FileDescriptor
            do {
                file = try folder.open(name, flags: O_RDWR | O_CREAT | O_EXCL, mode: mode)
            } catch where error.code == EEXIST {
                switch try reserveExisting(name, in: folder, for: owner, durable: durable, adoptUnrecorded: adoptUnrecorded,
                                           finalName: finalName) {
                case .some(let reservation): return reservation
                case .none: continue
                }
            }
            let created: stat
            do {
                _ = try retryingEINTR("fchmod", file.path) { fchmod(file.rawValue, mode_t(mode)) }
                created = try file.status()
                // Another agent that found the name before this lock (no record, no lock yet) took
                // it for a crash's leftover and removed it, maybe to create its own: the part is
                // ours only if it is still under the name once locked. Without this check both
                // wrote one record and one published the other's bytes (seen on GlusterFS).
                guard try file.tryLockExclusive(), let current = try folder.status(name),
                      current.st_ino == created.st_ino, current.st_dev == created.st_dev else { continue }
            } catch where isGone(error) {
                continue
            }
            let part = PartFile(folder: folder, finalName: finalName, name: name, file: file,
                                record: ResumeRecord(owner: owner.job, claim: owner.claim, part: UInt64(created.st_ino)),
                                size: 0, durable: durable)
            try part.writeRecord()
            return .ours(part)
        }
        return .taken(by: "another process (the name kept changing while it was looked at)")
    }

    /// A GlusterFS client reports ESTALE or ENOENT on flock(2), fstat(2) or fchmod(2) of a file
    /// that another client unlinked after it was opened.
    private static func isGone(_ error: SystemError) -> Bool {
        error.code == ESTALE || error.code == ENOENT
    }

    /// `reserve` when the name is taken: the part is another job's (`taken`), this owner's
    /// (reopened), or nobody's (removed, and nil is returned to look again; nil also when the
    /// name changed while it was looked at).
    private static func reserveExisting(_ name: String, in folder: DirectoryHandle, for owner: PartOwner, durable: Bool,
                                        adoptUnrecorded: Bool, finalName: String) throws(SystemError) -> Reservation? {
        guard let info = try folder.status(name) else { return nil }
        if (info.st_mode & S_IFMT) != S_IFREG {
            try folder.removeIfPresent(name)
            return nil
        }
        // The record first: a part has a second link for a moment while its owner publishes it
        // (link(2) + unlink(2) where RENAME_NOREPLACE is missing), and removing it then made the
        // owner's publish fail.
        let recordName = ResumeRecord.name(forPart: name)
        let record = readRecord(recordName, in: folder)
        if let record, !record.isOwned(by: owner) { return .taken(by: record.owner) }
        if info.st_nlink != 1 {
            // Planted, or a publish that a crash interrupted: removed, never written through.
            try removeUnowned(name, inode: UInt64(info.st_ino), recordKnown: record != nil, in: folder)
            return nil
        }
        let file: FileDescriptor
        do {
            file = try folder.open(name, flags: O_RDWR | O_NONBLOCK)
        } catch where error.code == ELOOP || error.code == ENOENT {
            return nil
        }
        let opened: stat
        do {
            opened = try file.status()
            guard (opened.st_mode & S_IFMT) == S_IFREG, opened.st_nlink == 1 else { return nil }
            guard try file.tryLockExclusive() else { return .taken(by: "another process") }
        } catch where isGone(error) {
            return nil
        }
        if record == nil, !adoptUnrecorded {
            // No owner and no writer (the creator takes the lock before the record exists):
            // planted or left by a crash, so it is replaced, never written through.
            try removeUnowned(name, inode: UInt64(opened.st_ino), recordKnown: false, in: folder)
            return nil
        }
        let inode = UInt64(opened.st_ino)
        var kept = record ?? ResumeRecord(owner: owner.job, claim: owner.claim, part: inode)
        if kept.part != inode {
            // The record describes an earlier file of this name: nothing in it can be trusted.
            kept = ResumeRecord(owner: owner.job, claim: owner.claim, part: inode)
        }
        let part = PartFile(folder: folder, finalName: finalName, name: name, file: file, record: kept,
                            size: Int64(opened.st_size), durable: durable)
        try? folder.removeIfPresent(part.recordTempName)
        if record == nil || kept != record { try part.writeRecord() }
        return .ours(part)
    }

    /// Removes `name`, a part no job owns, if the folder's listing shows it holds file `inode` and,
    /// unless a record was read (`recordKnown`), has no record beside it; returns whether it did.
    ///
    /// Lookups alone are not enough where the spool is shared through a network file system: a
    /// GlusterFS mount shows for up to a second the file a name held before another mount
    /// replaced it, and a record just replaced may not open. Unlinking by name then removed the
    /// part another agent had just created under it (seen in a 200-job same-name burst).
    @discardableResult
    private static func removeUnowned(_ name: String, inode: UInt64, recordKnown: Bool,
                                      in folder: DirectoryHandle) throws(SystemError) -> Bool {
        let recordName = ResumeRecord.name(forPart: name)
        let listed = try folder.listedInodes([name, recordName])
        guard listed[name] == inode, recordKnown || listed[recordName] == nil else { return false }
        try folder.removeIfPresent(name)
        return true
    }

    /// Removes the resume records a filed job left beside its published files (a crash between
    /// filing and the record's removal), when they name that job.
    static func removeRecords(of filed: StatusRecord, owner: PartOwner) {
        for download in filed.downloads where download.state == .done {
            guard let file = download.file,
                  let folder = try? DirectoryHandle.openRoot(FileSystem.directoryName(of: file), create: false) else { continue }
            let recordName = ResumeRecord.name(forPart: partName(for: FileSystem.baseName(of: file)))
            if readRecord(recordName, in: folder)?.isOwned(by: owner) == true { try? folder.removeIfPresent(recordName) }
        }
    }

    /// Writes a record back under `name` (a filing that could not finish removed it too early).
    static func restoreRecord(_ record: ResumeRecord, named name: String, in folder: DirectoryHandle) {
        let temp = "." + name + ".tmp"
        try? folder.removeIfPresent(temp)
        guard let file = try? folder.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) else { return }
        if (try? file.write(record.encoded())) != nil { try? folder.rename(temp, to: name) } else { try? folder.removeIfPresent(temp) }
    }

    static func readRecord(_ name: String, in folder: DirectoryHandle) -> ResumeRecord? {
        guard let file = try? folder.open(name, flags: O_RDONLY), let bytes = try? file.readAll(limit: 1 << 16) else {
            return nil
        }
        return ResumeRecord.decode(bytes)
    }

    /// The data that can be resumed over `kind`: what the record counts as fsynced and the file
    /// still holds, provided a validator can prove the server's file unchanged; anything else is cut off.
    func resumableBytes(over kind: TransferProtocol = .http) throws(SystemError) -> Int64 {
        size = Int64(try file.status().st_size)
        let usable = record.canResume(over: kind) ? min(size, record.bytes) : 0
        try truncate(to: usable)
        return usable
    }

    /// Cuts the file to `length` (ftruncate(2)) and positions the next write there.
    func truncate(to length: Int64) throws(SystemError) {
        if length < size { cuts += 1 }
        if length != size { try file.truncate(to: length) }
        try file.seek(to: length)
        size = length
        if record.bytes > length { record.bytes = length }
    }

    /// Records the validators of the response whose body is being written.
    func describe(url: String, mirror: Int, etag: String?, lastModified: String?, total: Int64?,
                  modified: Int64? = nil) {
        record.describe(url: url, mirror: mirror, etag: etag, lastModified: lastModified, size: total,
                        modified: modified)
    }

    /// Makes the data durable (fdatasync(2)) and then the record that counts it; data the record
    /// already counts needs no sync.
    func checkpoint() throws(SystemError) {
        if durable, size > record.bytes { try file.syncData() }
        record.bytes = size
        try writeRecord()
    }

    /// Counts the first `bytes` as durable in the record, once the caller made them so (a
    /// GroupCommit `.data` sync requested when the file held that many, and had been cut `cuts` times).
    func recordDurable(_ bytes: Int64, cuts cutsThen: Int) throws(SystemError) {
        guard cutsThen == cuts, bytes > record.bytes, bytes <= size else { return }
        record.bytes = bytes
        try writeRecord()
    }

    /// Start of the data not yet handed to writeback (`startWriteback`).
    private var writebackStart: Int64 = 0

    /// Hands the last few megabytes to the kernel's writeback (sync_file_range(2)) as they arrive,
    /// so that the checkpoints and the fsync before publishing find little left to write.
    func startWritebackIfDue() {
        guard durable, size - writebackStart >= PartFile.writebackChunk else { return }
        if writebackStart > size { writebackStart = 0 }
        _ = dfl_start_writeback(file.rawValue, writebackStart, size - writebackStart)
        writebackStart = size
    }

    static let writebackChunk: Int64 = 8 << 20

    private var recordTempName: String { "." + recordName + ".tmp" }

    /// Replaces the record: temp (O_EXCL) → write → rename. One writer per part (its flock), so the
    /// temp has one fixed name that a crash leaves for the next `reserve` to clear.
    private func writeRecord() throws(SystemError) {
        let temp = recordTempName
        try? folder.removeIfPresent(temp)
        let file = try folder.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        // The record about to be replaced, held open so that its blocks are not freed by the rename.
        let replaced = releaseReplacedRecord == nil ? nil : try? folder.open(recordName, flags: O_RDONLY)
        do {
            try file.write(record.encoded())
            try folder.rename(temp, to: recordName)
        } catch {
            try? folder.removeIfPresent(temp)
            throw error
        }
        if let replaced { releaseReplacedRecord?(replaced) }
    }

    /// Gives up the data and the name: the part and its record are removed.
    func discard() {
        try? folder.removeIfPresent(name)
        try? folder.removeIfPresent(recordName)
    }

    /// Removes the record once the data is published under its final name.
    func removeRecord() {
        try? folder.removeIfPresent(recordName)
    }
}
