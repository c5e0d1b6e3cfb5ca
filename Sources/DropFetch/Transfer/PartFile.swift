import CLinux
import Glibc

/// A download's hidden `.<file>.part` and its resume record, reached through the folder's
/// descriptor. Holding one means owning the name: it was created with O_EXCL for its owner job,
/// or reopened because its record, or the owner sealed on the part itself (OwnerMark), names
/// that job (docs/spool.md, invariant 6). A new part gets its record file only when one is
/// needed: the first checkpoint, a hold, a failure, validators that must be on disk before the
/// body; until then its mark alone proves whose it is (or, where the file system keeps no user
/// attributes, the record is written at once).
final class PartFile {
    /// How `reserve` ended.
    enum Reservation {
        case ours(PartFile)
        /// Another job (named, or "another process") owns the name.
        case taken(by: String)
        /// Something no job owns and the agent cannot clear is in the way (a folder).
        case obstructed(String)
    }

    private(set) var folder: DirectoryHandle
    /// The final name the data will be published under.
    let finalName: String
    /// `.<finalName>.part`, the final name shortened to 200 bytes first so that the part, its
    /// record and the record's temp file fit NAME_MAX.
    let name: String
    let file: FileDescriptor
    private(set) var record: ResumeRecord
    private let durable: Bool
    /// Seals the record (RecordKey): what this part's record says counts only with its seal.
    let key: RecordKey
    /// The record file as last written by this part: its inode and size, and the record it
    /// holds; nil until one was written or read.
    private var recordFile: (inode: UInt64, size: Int, saved: ResumeRecord)?
    /// Set by `discard` and `retire`: a late checkpoint must not write a record for data that is
    /// gone, or over the record of the part reopened after it.
    private var discarded = false
    /// The file offset of the next write when known (0 for a file just opened), else nil.
    private var position: Int64? = 0
    /// Bytes known to be in the file and valid (the writer keeps it current, appending at the
    /// file offset: an offset that was at the old end follows it to the new one).
    var size: Int64 {
        didSet {
            position = position == oldValue ? size : nil
            isUntouched = false
        }
    }
    /// Created empty here (O_EXCL, under this process's flock) and not written since: its size is
    /// known to be 0 without an fstat(2).
    private(set) var isUntouched = false
    /// Whether giving the part up loses nothing: no piece map, and an empty file (fstat(2): a
    /// split's connections write with pwrite and leave `size` behind).
    var holdsNoData: Bool { size == 0 && record.pieces == nil && (try? file.status().st_size) == 0 }
    /// How many times the data was cut back (truncate): a sync asked for before a cut proves nothing after it.
    private(set) var cuts = 0
    var recordName: String { ResumeRecord.name(forPart: name) }
    var path: String { FileSystem.join(folder.path, name) }
    /// Where the data is published under `finalName`, joined once: the job's record names it when
    /// the name is taken, and again when the part is published.
    private(set) lazy var finalPath = FileSystem.join(folder.path, finalName)

    /// The path of the data published as `target` (the final name, or a server's name for it).
    func publishedPath(as target: String) -> String {
        target == finalName ? finalPath : FileSystem.join(folder.path, target)
    }

    private init(folder: DirectoryHandle, finalName: String, name: String, file: FileDescriptor,
                 record: ResumeRecord, size: Int64, durable: Bool, key: RecordKey) {
        self.folder = folder
        self.finalName = finalName
        self.name = name
        self.file = file
        self.record = record
        self.size = size
        self.durable = durable
        self.key = key
    }

    static func partName(for finalName: String) -> String {
        "." + FileName.shortened(finalName, maxBytes: 200) + ".part"
    }

    /// Takes the `.part` of `finalName` for `owner`: created with O_EXCL (openat(2)) and its owner
    /// sealed on it (OwnerMark; a record file where the file system refuses that), or reopened when
    /// its record or its mark names this owner. `adoptUnrecorded` takes a part that has neither (a
    /// power loss before they reached the disk) when the owner's own state names this file.
    /// Anything planted under the name that is not a plain file is unlinked.
    ///
    /// Where the spool is shared through a network file system, another agent's part can come and
    /// go under the name while it is looked at (and a GlusterFS mount shows a name another mount
    /// removed or replaced for up to a second): a name that still changes after four looks is
    /// reported `taken`, so that the caller moves on as `on_conflict` says (as it does when
    /// something keeps planting files under the name), rather than failing the job.
    static func reserve(_ finalName: String, in folder: DirectoryHandle, for owner: PartOwner, mode: UInt32,
                        durable: Bool, key: RecordKey, adoptUnrecorded: Bool = false) throws(SystemError) -> Reservation {
        let name = partName(for: finalName)
        for _ in 0..<4 {
            let file: FileDescriptor
            do {
                file = try folder.open(name, flags: O_RDWR | O_CREAT | O_EXCL, mode: mode)
            } catch where error.code == EEXIST {
                switch try reserveExisting(name, in: folder, for: owner, durable: durable, key: key,
                                           adoptUnrecorded: adoptUnrecorded, finalName: finalName) {
                case .some(let reservation): return reservation
                case .none: continue
                }
            }
            let created: stat
            do {
                created = try file.status()
                // `mode` whatever the umask (docs/config.md `file_mode`): fchmod(2) only when the
                // umask or a default ACL of the folder took bits away.
                if created.st_mode & 0o7777 != mode_t(mode) {
                    _ = try retryingEINTR("fchmod", file.path) { fchmod(file.rawValue, mode_t(mode)) }
                }
                // Another agent that found the name before this lock (no record, no mark, no lock
                // yet) took it for a crash's leftover and removed it, maybe to create its own: the
                // part is ours only if it is still under the name once locked (flock(2) succeeds on
                // a file that is gone). Without this check both wrote one record and one published
                // the other's bytes (seen on GlusterFS).
                guard try file.tryLockExclusive(), let current = try folder.status(name),
                      current.st_ino == created.st_ino, current.st_dev == created.st_dev else { continue }
            } catch where isGone(error) {
                continue
            }
            let part = PartFile(folder: folder, finalName: finalName, name: name, file: file,
                                record: ResumeRecord(owner: owner.job, claim: owner.claim, part: UInt64(created.st_ino)),
                                size: 0, durable: durable, key: key)
            part.isUntouched = true
            // Locked and still under the name: the mark makes it this owner's across a crash. A
            // crash before it leaves a part no one owns, which the next reservation clears.
            if try !part.markOwner(owner) { try part.writeRecord() }
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
    /// name changed while it was looked at). Its owner is the one its sealed record names when the
    /// record describes this file, else the one sealed on the file itself (OwnerMark: a part with
    /// no resumable bytes), else the one an older record names; with none of them it is nobody's.
    private static func reserveExisting(_ name: String, in folder: DirectoryHandle, for owner: PartOwner, durable: Bool,
                                        key: RecordKey, adoptUnrecorded: Bool, finalName: String) throws(SystemError) -> Reservation? {
        guard let info = try folder.status(name) else { return nil }
        if (info.st_mode & S_IFMT) != S_IFREG {
            // A folder planted under the name is no one's part: the name is taken, as a file's would be.
            guard (info.st_mode & S_IFMT) != S_IFDIR else { return .obstructed("a folder is in the way of \(folder.path)/\(name)") }
            try folder.removeIfPresent(name)
            return nil
        }
        // The owner first: a part has a second link for a moment while its owner publishes it
        // (link(2) + unlink(2) where RENAME_NOREPLACE is missing), and removing it then made the
        // owner's publish fail.
        let recordName = ResumeRecord.name(forPart: name)
        let found: (record: ResumeRecord, size: Int, inode: UInt64)?
        switch readRecordFile(recordName, in: folder, key: key) {
        case .sealed(let record, let size, let inode): found = (record, size, inode)
        case .none: found = nil
        case .foreign(let inode):
            // A record no agent of this spool sealed (planted, or an older version's): it proves
            // nothing, and its part is nobody's. Removed, then the name is looked at again.
            if try folder.listedInodes([recordName])[recordName] == inode { try folder.removeIfPresent(recordName) }
            return nil
        }
        var record = found?.record
        // Opened (and its status taken) before the owner is known only when the mark must be read.
        var opened: (file: FileDescriptor, info: stat)?
        if record?.part != UInt64(info.st_ino) {
            do {
                let file = try folder.open(name, flags: O_RDWR | O_NONBLOCK)
                let status = try file.status()
                guard (status.st_mode & S_IFMT) == S_IFREG else { return nil }
                opened = (file, status)
            } catch where error.code == ELOOP || isGone(error) {
                return nil
            }
            if let opened, let marked = OwnerMark.read(from: opened.file, part: UInt64(opened.info.st_ino), key: key) {
                record = ResumeRecord(owner: marked.job, claim: marked.claim, part: UInt64(opened.info.st_ino))
            }
        }
        if let record, !record.isOwned(by: owner) { return .taken(by: record.owner) }
        if info.st_nlink != 1 {
            // Planted, or a publish that a crash interrupted: removed, never written through.
            try removeUnowned(name, inode: UInt64(info.st_ino), recordKnown: record != nil, in: folder)
            return nil
        }
        let file: FileDescriptor
        let status: stat
        do {
            if let opened {
                (file, status) = opened
            } else {
                file = try folder.open(name, flags: O_RDWR | O_NONBLOCK)
                status = try file.status()
            }
            guard (status.st_mode & S_IFMT) == S_IFREG, status.st_nlink == 1 else { return nil }
            guard try file.tryLockExclusive() else { return .taken(by: "another process") }
        } catch where error.code == ELOOP || isGone(error) {
            return nil
        }
        if record == nil, !adoptUnrecorded {
            // No owner and no writer (the creator takes the lock before it marks the part or
            // writes its record): planted or left by a crash, so it is replaced, never written through.
            try removeUnowned(name, inode: UInt64(status.st_ino), recordKnown: false, in: folder)
            return nil
        }
        let inode = UInt64(status.st_ino)
        var kept = record ?? ResumeRecord(owner: owner.job, claim: owner.claim, part: inode)
        if kept.part != inode {
            // The record describes an earlier file of this name: nothing in it can be trusted.
            kept = ResumeRecord(owner: owner.job, claim: owner.claim, part: inode)
        }
        let part = PartFile(folder: folder, finalName: finalName, name: name, file: file, record: kept,
                            size: Int64(status.st_size), durable: durable, key: key)
        try? folder.removeIfPresent(part.recordTempName)
        if let found, kept == found.record { part.recordFile = (found.inode, found.size, found.record) }
        // A record file that does not hold what is kept (an earlier file's) is replaced; a part
        // its mark alone proves keeps going without one, as a new part does.
        if let found, kept != found.record {
            try part.writeRecord()
        } else if found == nil, record == nil {
            if try !part.markOwner(owner) { try part.writeRecord() }
        }
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

    /// The owner sealed on file `name` (a `.part`, or a file published from one: rename(2) keeps
    /// the mark) as a record with no resumable bytes, no validator; nil when it is not a plain file
    /// or carries no mark that verifies for it (`key`; nil reads it unchecked, as `readRecord`).
    static func readMark(_ name: String, in folder: DirectoryHandle, key: RecordKey?) -> ResumeRecord? {
        // A file of the destination: a FIFO swapped in must not block the open (O_NONBLOCK).
        guard let file = try? folder.open(name, flags: O_RDONLY | O_NONBLOCK), let info = try? file.status(),
              (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let inode = UInt64(info.st_ino)
        return OwnerMark.read(from: file, part: inode, key: key).map { ResumeRecord(owner: $0.job, claim: $0.claim, part: inode) }
    }

    /// Who owns the `.part` `name` as the disk shows it: its sealed record, else the owner marked
    /// on the part itself (`readMark`); nil when neither says.
    static func readOwner(ofPart name: String, in folder: DirectoryHandle, key: RecordKey?) -> ResumeRecord? {
        readRecord(ResumeRecord.name(forPart: name), in: folder, key: key) ?? readMark(name, in: folder, key: key)
    }

    /// Removes the resume records a filed job left beside its published files (a crash between
    /// filing and the record's removal), when they name that job, and the files' owner marks.
    static func removeRecords(of filed: StatusRecord, owner: PartOwner, key: RecordKey?) {
        for download in filed.downloads where download.state == .done {
            guard let file = download.file,
                  let folder = try? DirectoryHandle.openRoot(FileSystem.directoryName(of: file), create: false) else { continue }
            let recordName = ResumeRecord.name(forPart: partName(for: FileSystem.baseName(of: file)))
            if readRecord(recordName, in: folder, key: key)?.isOwned(by: owner) == true { try? folder.removeIfPresent(recordName) }
            removeMark(of: FileSystem.baseName(of: file), in: folder, owner: owner, key: key)
        }
    }

    /// Removes the owner mark from file `name` (fremovexattr(2)) if it is `owner`'s (its seal
    /// verifies for that file under `key`): a filed job's published file. Once its job is filed the
    /// file is no job's, as its record is gone: a later job file of the same name that gets the
    /// filed one's inode again (ext4 hands freed inodes out at once) must not take it for its own.
    /// Returns the file, still open, when its mark was removed (`restoreMark` puts it back).
    @discardableResult
    static func removeMark(of name: String, in folder: DirectoryHandle, owner: PartOwner, key: RecordKey?) -> FileDescriptor? {
        guard let file = try? folder.open(name, flags: O_RDONLY | O_NONBLOCK), let info = try? file.status(),
              (info.st_mode & S_IFMT) == S_IFREG,
              OwnerMark.read(from: file, part: UInt64(info.st_ino), key: key) == owner,
              (try? file.removeAttribute(OwnerMark.attribute)) != nil else { return nil }
        return file
    }

    /// `removeMark` of the published file at `path` (a status file's `file`).
    @discardableResult
    static func removeMark(ofPublished path: String, owner: PartOwner, key: RecordKey?) -> FileDescriptor? {
        guard let folder = try? DirectoryHandle.openRoot(FileSystem.directoryName(of: path), create: false) else { return nil }
        return removeMark(of: FileSystem.baseName(of: path), in: folder, owner: owner, key: key)
    }

    /// Marks `file` as `owner`'s again (a filing that removed the marks could not finish).
    static func restoreMark(on file: FileDescriptor, owner: PartOwner, key: RecordKey) {
        guard let info = try? file.status() else { return }
        try? file.setAttribute(OwnerMark.attribute, to: OwnerMark.value(for: owner, part: UInt64(info.st_ino), key: key))
    }

    /// Writes a record back under `name` (a filing that could not finish removed it too early).
    static func restoreRecord(_ record: ResumeRecord, named name: String, in folder: DirectoryHandle, key: RecordKey) {
        _ = try? createRecordFile(record, named: name, in: folder, key: key)
    }

    /// The record under `name` if its seal verifies (`key`; nil reads it unchecked, see
    /// ResumeRecordFile.unseal); nil for anything else, a FIFO or a folder included.
    static func readRecord(_ name: String, in folder: DirectoryHandle, key: RecordKey?) -> ResumeRecord? {
        guard case .sealed(let record, _, _) = readRecordFile(name, in: folder, key: key) else { return nil }
        return record
    }

    /// What is found under a record's name.
    private enum RecordRead {
        case sealed(ResumeRecord, size: Int, inode: UInt64)
        /// A plain file whose seal does not verify (or that is no record at all): file `inode`.
        case foreign(inode: UInt64)
        /// Nothing, or nothing that could be read as a file (a FIFO, a folder, a symlink).
        case none
    }

    /// A record file read as an untrusted one (UntrustedFile: no symlink followed, no blocking
    /// open of a FIFO planted in the destination, a regular file of at most
    /// ResumeRecordFile.maxFileSize bytes), its seal verified.
    private static func readRecordFile(_ name: String, in folder: DirectoryHandle, key: RecordKey?) -> RecordRead {
        guard let file = try? folder.readUntrusted(name, limit: ResumeRecordFile.maxFileSize) else { return .none }
        guard let record = ResumeRecordFile.unseal(file.bytes, key: key) else { return .foreign(inode: file.inode) }
        return .sealed(record, size: file.bytes.count, inode: file.inode)
    }

    /// Writes a new record file: temp (O_EXCL) → write → rename over `name`; returns its inode and size.
    private static func createRecordFile(_ record: ResumeRecord, named name: String, in folder: DirectoryHandle,
                                         key: RecordKey) throws(SystemError) -> (inode: UInt64, size: Int) {
        let temp = PartFile.recordTempName(of: name)
        let file: FileDescriptor
        do {
            file = try folder.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        } catch where error.code == EEXIST {
            // A crash's leftover: one writer per part (its flock), so it is nobody's now.
            try folder.removeIfPresent(temp)
            file = try folder.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        }
        let image = ResumeRecordFile.image(record, key: key)
        do {
            try file.write(image)
            let inode = UInt64(try file.status().st_ino)
            try folder.rename(temp, to: name)
            return (inode, image.count)
        } catch {
            try? folder.removeIfPresent(temp)
            throw error
        }
    }

    /// The data that can be resumed over `kind`: what the record counts as fsynced and the file
    /// still holds, provided a validator can prove the server's file unchanged; anything else is cut off.
    func resumableBytes(over kind: TransferProtocol = .http) throws(SystemError) -> Int64 {
        if !isUntouched {
            let onDisk = Int64(try file.status().st_size)
            if onDisk != size {
                size = onDisk
                // Grown behind this part's appends (a split's connections write with pwrite(2)):
                // the file offset stayed where the appends left it, so the next write must seek,
                // or a resume from the size on disk would write over the pieces.
                position = nil
            }
        }
        let usable = record.canResume(over: kind) ? record.trustedBytes(of: size) : 0
        try truncate(to: usable)
        return usable
    }

    /// Cuts the file to `length` (ftruncate(2)) and positions the next write there (lseek(2),
    /// unless the writes so far already left it there: writes only ever append).
    func truncate(to length: Int64) throws(SystemError) {
        if length < size { cuts += 1 }
        if length != size { try file.truncate(to: length) }
        if position != length { try file.seek(to: length) }
        position = length
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

    /// Records the pieces a segmented download has written (issue 26), without a sync: written
    /// before a segment's bytes land, so that a kill on this boot resumes them, and a one-connection
    /// resume never takes a hole for data. Pieces already counted as synced stay counted.
    func recordPieces(_ pieces: PieceMap) throws(SystemError) {
        // Data written in order until now: its synced prefix counts as a synced piece.
        let syncedBefore = record.syncedPieces ?? (record.pieces == nil && record.bytes > 0 ? [PieceMap.Range(0, record.bytes)] : [])
        record.pieces = pieces.done
        let synced = PieceMap(total: pieces.total, done: syncedBefore)
        record.syncedPieces = synced.intersection(pieces).done
        try writeRecord()
    }

    /// Makes a segmented download's data durable (fdatasync(2)) and then the record that counts
    /// `pieces` as synced, as `checkpoint` does for data written in order.
    func checkpoint(pieces: PieceMap) throws(SystemError) {
        if durable { try file.syncData() }
        record.pieces = pieces.done
        record.syncedPieces = pieces.done
        try writeRecord()
    }

    /// Counts `pieces` (the map when a sync was asked for, `cuts` cuts ago) as synced once the
    /// caller made them durable (a GroupCommit `.data` sync), as `recordDurable` does for data in order.
    func recordSynced(pieces: PieceMap, cuts cutsThen: Int) throws(SystemError) {
        guard cutsThen == cuts, let written = record.pieces else { return }
        let synced = PieceMap(total: pieces.total, done: (record.syncedPieces ?? []) + pieces.done)
            .intersection(PieceMap(total: pieces.total, done: written))
        guard synced.done != record.syncedPieces else { return }
        record.syncedPieces = synced.done
        try writeRecord()
    }

    /// Writes the record as it stands, without a sync: the validators of a response are on disk
    /// before its body is, and a transfer that stops (failed, held, cancelled) leaves its record
    /// current, so that a process killed on this boot resumes all of its data; after a reboot what
    /// the last checkpoint synced counts. No fdatasync(2) on the loop.
    func saveRecord() throws(SystemError) {
        try writeRecord()
    }

    /// Seals `owner` onto the part (OwnerMark, fsetxattr(2)); false where the file system keeps no
    /// user attribute (then the record file must prove the owner, and is written at once).
    private func markOwner(_ owner: PartOwner) throws(SystemError) -> Bool {
        guard !folder.refusesUserAttributes else { return false }
        do {
            try file.setAttribute(OwnerMark.attribute, to: OwnerMark.value(for: owner, part: record.part, key: key))
            return true
        } catch where OwnerMark.isRefusal(error) {
            if OwnerMark.refusesFolder(error) { folder.noteUserAttributesRefused() }
            return false
        }
    }

    /// Whether its record file holds the record as it is now (no write of it failed since).
    var recordIsWritten: Bool { recordFile?.saved == record }

    /// Writes the record again if a write of it failed (no descriptor, no space) and the part
    /// holds data: the next run resumes only what a record vouches for.
    func saveOwedRecord() {
        if !recordIsWritten, !holdsNoData { try? saveRecord() }
    }

    /// Whether this part has a record file (written or read by it): until its first checkpoint,
    /// hold or failure a new part has none, and nothing is removed for it when it is filed.
    var hasRecordFile: Bool { recordFile != nil }

    /// Whether the record on disk vouches for data (it names a validator): a new response must
    /// then be recorded before its body is written, or the old validator would cover new bytes.
    var savedRecordVouches: Bool {
        guard let saved = recordFile?.saved else { return false }
        return saved.validator != nil || saved.modified != nil
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

    /// Hands `[start, end)`, bytes a segment wrote at its offset, to the kernel's writeback, as
    /// `startWritebackIfDue` does for data in order, so that the fdatasync before publishing finds
    /// little left to write.
    func startWriteback(from start: Int64, to end: Int64) {
        guard durable, end > start else { return }
        _ = dfl_start_writeback(file.rawValue, start, end - start)
    }

    private var recordTempName: String { PartFile.recordTempName(of: recordName) }

    /// Writes the record, stamped with this boot: in place over its file (pwrite(2) of the same
    /// size, no new blocks: ResumeRecordFile), or as a new file (temp → rename) when there is
    /// none of ours yet or it has outgrown its size. One writer per part (its flock), so the temp
    /// has one fixed name that a crash leaves for the next `reserve` to clear.
    private func writeRecord() throws(SystemError) {
        guard !discarded else { return }
        record.boot = BootID.current
        if let current = recordFile, let image = ResumeRecordFile.image(record, key: key, size: current.size),
           let file = try? folder.open(recordName, flags: O_WRONLY | O_NONBLOCK),
           let info = try? file.status(), UInt64(info.st_ino) == current.inode, info.st_size == current.size {
            try file.write(image, at: 0)
            recordFile = (current.inode, current.size, record)
            return
        }
        let created = try PartFile.createRecordFile(record, named: recordName, in: folder, key: key)
        recordFile = (created.inode, created.size, record)
    }

    /// Reaches its folder through `same` (that folder, named by another path) from now on.
    func relabel(_ same: DirectoryHandle) {
        folder = same
        finalPath = FileSystem.join(same.path, finalName)
    }

    /// Gives up the data and the name: the part and its record are removed.
    func discard() {
        markDiscarded()
        location.remove()
    }

    /// Gives up the data without removing it here: the removal is on its way to a worker
    /// (`PartRemoval`), and no record may be written for the part meanwhile.
    func markDiscarded() {
        discarded = true
    }

    /// Takes `known`, the record this part had when it was set aside (SetAsidePart), when it
    /// describes this file: a record file that found no descriptor or space was never written,
    /// and the reopened part would otherwise resume nothing of what the download got.
    func restore(record known: ResumeRecord) {
        guard known.part == record.part, known.isOwned(by: PartOwner(job: record.owner, claim: record.claim)) else { return }
        record = known
    }

    /// Gives the part up to a later reservation that reopens it (SetAsidePart): a step still
    /// holding this object (a sync's answer) writes no record over the one the reopened part keeps.
    func retire() { discarded = true }

    // MARK: - Across threads (and `Location`, in PartFile+Location.swift)

    /// A part taken on a worker (`PartReservation`) on its way to the loop: everything a `PartFile`
    /// holds, as `Sendable` values. The worker does not use its part after `handOver()`, and the
    /// loop makes its own from it (`init(handedOver:)`), so the part is only ever one thread's.
    struct HandedOver: Sendable {
        fileprivate let folder: DirectoryHandle
        fileprivate let finalName: String
        fileprivate let name: String
        fileprivate let file: FileDescriptor
        fileprivate let record: ResumeRecord
        fileprivate let size: Int64
        fileprivate let durable: Bool
        fileprivate let key: RecordKey
        fileprivate let recordFile: (inode: UInt64, size: Int, saved: ResumeRecord)?
        fileprivate let discarded: Bool
        fileprivate let position: Int64?
        fileprivate let cuts: Int
        fileprivate let writebackStart: Int64
        fileprivate let isUntouched: Bool
    }

    /// This part's state, for the thread that goes on with it; this object is not used again.
    func handOver() -> HandedOver {
        HandedOver(folder: folder, finalName: finalName, name: name, file: file, record: record, size: size,
                   durable: durable, key: key, recordFile: recordFile, discarded: discarded, position: position,
                   cuts: cuts, writebackStart: writebackStart, isUntouched: isUntouched)
    }

    /// The part another thread handed over.
    convenience init(handedOver part: HandedOver) {
        self.init(folder: part.folder, finalName: part.finalName, name: part.name, file: part.file, record: part.record,
                  size: part.size, durable: part.durable, key: part.key)
        recordFile = part.recordFile
        discarded = part.discarded
        position = part.position
        cuts = part.cuts
        writebackStart = part.writebackStart
        isUntouched = part.isUntouched
    }
}
