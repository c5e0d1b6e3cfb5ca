/// A `.part` with no data closed while its download waits for a descriptor: the file stays on
/// disk with its owner sealed on it (OwnerMark) or in its record, so the name stays the job's
/// (docs/spool.md, invariant 6) without holding a descriptor, and the download's next reservation
/// reopens it (`PartFile.reserve` finds it this owner's). Before, the part was removed, and a job
/// that resolved to the same name meanwhile took the name this one had chosen first.
struct SetAsidePart: Sendable {
    let location: PartFile.Location
    /// The part's inode: a file found under the name that is not this one is not removed.
    let inode: UInt64

    /// `part`'s place; the caller drops `part`, which closes its descriptor.
    init(_ part: PartFile) {
        location = part.location
        inode = part.record.part
    }

    /// Whether `location` is where this part lies.
    func isAt(_ other: PartFile.Location) -> Bool {
        other.name == location.name && other.folder.path == location.folder.path
    }

    /// Gives the name up: the part and its record are removed if the name still holds this file
    /// (fstatat(2)); the download ended, or goes on under another name.
    func remove() {
        guard let found = try? location.folder.status(location.name), UInt64(found.st_ino) == inode else { return }
        location.remove()
    }
}
