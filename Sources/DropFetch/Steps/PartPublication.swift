import Glibc

/// A complete `.part` given its final name under `on_conflict` as one step on a worker: its folder
/// checked to be still below the destination root, then renamed (replacing for `overwrite`, never
/// replacing for `fail`, the first free `x.1.iso`, … for `rename`). The rename takes the folder's
/// lock and, on a busy disk, waits for its blocks under write I/O; on the loop that stalled every
/// transfer (`JobPublisher` makes one after the data is durable and syncs the folder after it).
final class PartPublication: WorkerTask {
    enum Ending: Sendable {
        /// Published under this name.
        case published(String)
        case failed(Failure)
    }

    let request: Request
    /// How it ended, kept on the loop once the batch is back.
    private(set) var ending: Ending = .failed(Failure(.internal, "not published"))

    /// Only the part's folder and names go to the worker (`PartFile.Location`): the loop leaves a
    /// publishing part alone.
    init(_ part: PartFile, as target: String, below root: DirectoryHandle, onConflict: Config.ConflictPolicy) {
        request = Request(part: part.location, target: target, root: root, onConflict: onConflict, published: PublishedName())
    }

    func received(_ answer: Ending) -> SystemError? {
        ending = answer
        return nil
    }

    /// The name a publication gave the part, for a removal queued behind it on the same worker
    /// (`PartRemoval`): the removal's request is made on the loop while the publication may still
    /// be on its way, in the same batch or the one before, so the name cannot come to it through
    /// the loop. Written once by the publication and read by the removal, both on the worker
    /// (which runs its requests in order); the loop reads the publication's answer, never this.
    final class PublishedName: Sendable {
        private let name = Locked<String?>(nil)

        var value: String? { name.withLock { $0 } }

        fileprivate func set(_ published: String) {
            name.withLock { $0 = published }
        }
    }

    struct Request: WorkerRequest {
        let part: PartFile.Location
        let target: String
        let root: DirectoryHandle
        let onConflict: Config.ConflictPolicy
        let published: PublishedName

        func perform() -> Ending {
            guard root.stillContains(part.folder) else {
                return .failed(Failure(.invalidJob, "\(part.folder.path) was moved or replaced while in use; not published into"))
            }
            do {
                let name = try rename()
                published.set(name)
                return .published(name)
            } catch {
                return .failed(Failure(PartPublication.kind(of: error), error.description))
            }
        }

        private func rename() throws(SystemError) -> String {
            switch onConflict {
            case .overwrite:
                try part.folder.rename(part.name, to: target)
                return target
            case .fail:
                try part.folder.moveNoReplace(part.name, to: part.folder, as: target)
                return target
            case .rename:
                for candidate in OutputNames.variants(of: target) {
                    do {
                        try part.folder.moveNoReplace(part.name, to: part.folder, as: candidate)
                        return candidate
                    } catch where error.code == EEXIST {
                        continue
                    }
                }
                throw SystemError(code: EEXIST, operation: "rename", path: part.finalPath)
            }
        }
    }

    static func kind(of error: SystemError) -> ErrorKind {
        error.code == EEXIST ? .exists : (error.isNoSpace ? .noSpace : .internal)
    }
}
