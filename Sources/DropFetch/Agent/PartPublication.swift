import Glibc

/// A complete `.part` given its final name under `on_conflict` as one step on a worker: its folder
/// checked to be still below the destination root, then renamed (replacing for `overwrite`, never
/// replacing for `fail`, the first free `x.1.iso`, … for `rename`). The rename takes the folder's
/// lock and, on a busy disk, waits for its blocks under write I/O; on the loop that stalled every
/// transfer (`JobPublisher` makes one after the data is durable and syncs the folder after it).
final class PartPublication: WorkerTask {
    enum Ending {
        /// Published under this name.
        case published(String)
        case failed(Failure)
    }

    private let part: PartFile
    private let target: String
    private let root: DirectoryHandle
    private let onConflict: Config.ConflictPolicy
    /// How it ended, read on the loop once the batch is back.
    private(set) var ending: Ending = .failed(Failure(.internal, "not published"))

    /// Only the part's folder and names are read here: the loop leaves a publishing part alone.
    init(_ part: PartFile, as target: String, below root: DirectoryHandle, onConflict: Config.ConflictPolicy) {
        self.part = part
        self.target = target
        self.root = root
        self.onConflict = onConflict
    }

    func perform() -> SystemError? {
        guard root.stillContains(part.folder) else {
            ending = .failed(Failure(.invalidJob, "\(part.folder.path) was moved or replaced while in use; not published into"))
            return nil
        }
        do {
            ending = .published(try rename())
        } catch {
            ending = .failed(Failure(PartPublication.kind(of: error), error.description))
        }
        return nil
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

    static func kind(of error: SystemError) -> ErrorKind {
        error.code == EEXIST ? .exists : (error.isNoSpace ? .noSpace : .internal)
    }
}
