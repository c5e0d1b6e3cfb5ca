/// The data of a download whose job left while it was being published (cancel, `rm`), removed on
/// the worker after the publishing rename that may be on its way there: the `.part`, its record,
/// and the published name too if it got one and still holds the part's inode.
final class PartRemoval: WorkerTask {
    private let part: PartFile
    private let inode: UInt64
    private let publication: PartPublication?

    init(_ part: PartFile, publication: PartPublication?) {
        self.part = part
        inode = part.record.part
        self.publication = publication
    }

    /// Runs after `publication` on the same worker, so its ending is final here.
    func perform() -> SystemError? {
        if case .published(let name)? = publication?.ending, name != part.name,
           let info = try? part.folder.status(name), UInt64(info.st_ino) == inode {
            try? part.folder.removeIfPresent(name)
        }
        part.discard()
        return nil
    }
}
