/// The data of a download whose job left while it was being published (cancel, `rm`), removed on
/// the worker after the publishing rename that may be on its way there or still held for the next
/// finish batch (`FinishBatch.remove`): the `.part`, its record, and the published name too if it
/// got one and still holds the part's inode.
final class PartRemoval: WorkerTask {
    let request: Request

    /// The part is given up at once (no record is written for it any more); its files go on the worker.
    init(_ part: PartFile, publication: PartPublication?) {
        part.markDiscarded()
        request = Request(part: part.location, inode: part.record.part, published: publication?.request.published)
    }

    func received(_ answer: Void) -> SystemError? { nil }

    struct Request: WorkerRequest {
        let part: PartFile.Location
        let inode: UInt64
        /// Set by the publication, which runs before this on the same worker.
        let published: PartPublication.PublishedName?

        func perform() {
            if let name = published?.value, name != part.name,
               let info = try? part.folder.status(name), UInt64(info.st_ino) == inode {
                try? part.folder.removeIfPresent(name)
            }
            part.remove()
        }
    }
}
