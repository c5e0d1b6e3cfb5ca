import Glibc

/// A `.part` closed while its download waits, for a descriptor (an empty one) or for its retry
/// (with its data): the file stays on disk with its owner sealed on it (OwnerMark) or in its
/// record, so the name and the data stay the job's (docs/spool.md, invariant 6) without holding a
/// descriptor, and the download's next reservation reopens it (`PartFile.reserve` finds it this
/// owner's; `PartReservation` takes it as the download's own). Before, the part was removed, and a
/// job that resolved to the same name meanwhile took the name this one had chosen first.
///
/// It keeps its folder's path, not its handle: the handle of a `dir=` subfolder is a descriptor
/// of its own, which a download waiting for descriptors must not hold.
struct SetAsidePart: Sendable {
    private(set) var folderPath: String
    /// Its folder's st_dev and st_ino: which folder it lies in, whatever path names it now.
    let folderDevice: UInt64
    let folderInode: UInt64
    let name: String
    let finalName: String
    /// The part's inode and owner: a file under the name that is not this one is not removed.
    let inode: UInt64
    let owner: PartOwner
    /// Whether it holds data (or a split's pieces) for the next attempt to resume.
    let holdsData: Bool
    /// Its record as the loop last knew it: its record file may be older, or missing when no
    /// descriptor was free to write it.
    let record: ResumeRecord
    /// Whether `record` is not in its record file (a write that found no descriptor): it is
    /// written before the agent ends or the job is held (`writeOwedRecord`), for the next run.
    let owesRecord: Bool
    /// The descriptor the part had: while a step still holds it (a sync of the data), so does the
    /// part's lock, and the next reservation waits for it rather than take another name.
    private weak var descriptor: FileDescriptor?
    private let key: RecordKey

    /// `part`'s place; the caller drops `part`, which closes its descriptor.
    init(_ part: PartFile) {
        folderPath = part.folder.path
        folderDevice = part.folder.device
        folderInode = part.folder.inode
        name = part.name
        finalName = part.finalName
        inode = part.record.part
        owner = PartOwner(job: part.record.owner, claim: part.record.claim)
        holdsData = !part.holdsNoData
        record = part.record
        owesRecord = holdsData && !part.recordIsWritten
        descriptor = part.file
        key = part.key
    }

    /// The destination folder `old` was moved and the config names it `new` (`Job.relabelDestination`).
    mutating func relabel(from old: String, to new: String) {
        if let moved = FileSystem.moved(folderPath, from: old, to: new) { folderPath = moved }
    }

    /// Whether the descriptor it had may still hold the part's lock (flock(2)).
    var mayStillBeLocked: Bool { descriptor != nil }

    /// Whether `location` is where this part lies.
    func isAt(_ location: PartFile.Location) -> Bool {
        location.name == name && isIn(location.folder)
    }

    /// Whether it lies in `folder`: the path it was set aside under, or the same st_dev and st_ino
    /// under another path (a destination moved and relabelled: `Job.relabelDestination`).
    func isIn(_ folder: DirectoryHandle) -> Bool {
        folder.path == folderPath || (folder.device == folderDevice && folder.inode == folderInode)
    }

    /// Writes `record` into the part's record file if a write of it failed: without it the next
    /// run could not resume the data the part holds. Only while the name holds this part, marked
    /// as this owner's, and under its lock (flock(2)): a part another job created under the name
    /// since, or that another agent reopened, is not written over.
    func writeOwedRecord() {
        guard owesRecord, let folder = try? DirectoryHandle.openRoot(folderPath, create: false),
              let file = try? folder.open(name, flags: O_RDWR | O_NONBLOCK), let info = try? file.status(),
              UInt64(info.st_ino) == inode, (try? file.tryLockExclusive()) == true, isOwn(file, in: folder) else { return }
        PartFile.restoreRecord(record, named: ResumeRecord.name(forPart: name), in: folder, key: key)
    }

    /// Whether `file` (this part's inode) is this owner's: by the mark sealed on it, else by a
    /// record that describes this inode.
    private func isOwn(_ file: FileDescriptor, in folder: DirectoryHandle) -> Bool {
        if let marked = OwnerMark.read(from: file, part: inode, key: key) { return marked == owner }
        guard let found = PartFile.readRecord(ResumeRecord.name(forPart: name), in: folder, key: key) else { return false }
        return found.part == inode && found.isOwned(by: owner)
    }

    /// Gives the name up: the part and its record are removed if the name still holds this file
    /// and its record or mark still names this owner. A closed part's inode is free for another
    /// file once the part is unlinked (by `dropfetch cancel`, say): the inode alone would let this
    /// remove another job's new part.
    func remove() {
        guard let folder = try? DirectoryHandle.openRoot(folderPath, create: false),
              let found = try? folder.status(name), UInt64(found.st_ino) == inode,
              PartFile.readOwner(ofPart: name, in: folder, key: key)?.isOwned(by: owner) == true else { return }
        PartFile.Location(folder: folder, name: name, finalName: finalName).remove()
    }
}
