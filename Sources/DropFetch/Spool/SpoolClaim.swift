import Glibc

/// One inbox job's claim as a single step on the group commit's worker (docs/spool.md, claim
/// protocol): renamed into the work folder (`Spool.claim`) from its routing folder's descriptor,
/// its released hints taken up (`ReleasedState`), and the job file read. The rename and the read
/// look names up in the work folder, whose blocks the worker's fsyncs keep under write I/O; on the
/// loop that stalled every transfer.
final class SpoolClaim: WorkerTask {
    /// How the claim ended, read on the loop once the batch is back.
    enum Ending {
        /// In the work folder as `workName`; `previous` holds the hints a release left in the inbox.
        case claimed(workName: String, previous: StatusRecord?, contents: Result<JobFileReader.Contents, JobFileReader.Failure>)
        /// Gone from the inbox: another agent claimed it, or it was removed.
        case gone
        /// The routing folder is no longer a folder below the inbox (a symlink or a file now):
        /// nothing was followed, moved or read.
        case notFollowed(SystemError)
        /// Not claimed, or put back: the job stays in the inbox and is tried again later.
        case failed(SystemError)
    }

    let entry: Spool.InboxEntry
    private let spool: Spool
    private let limit: Int64
    private(set) var ending: Ending = .gone

    init(_ entry: Spool.InboxEntry, in spool: Spool, limit: Int64) {
        self.entry = entry
        self.spool = spool
        self.limit = limit
    }

    /// Uses only what `Spool.claim`, `adoptReleasedState` and `JobFileReader` read: the spool's
    /// fixed paths, its folder handles and its crash plan.
    func perform() -> SystemError? {
        let folder: DirectoryHandle
        do {
            folder = try spool.routingFolder(entry.folder)
        } catch {
            switch error.code {
            case ENOENT: ending = .gone
            case ELOOP, ENOTDIR: ending = .notFollowed(error)
            default: ending = .failed(error)
            }
            return nil
        }
        do {
            guard let workName = try spool.claim(entry.name, from: folder) else {
                ending = .gone
                return nil
            }
            spool.crashPlan?.reach(.claimed)
            let contents = spool.readClaimedJob(workName, limit: limit)
            if case .failure(.transient(let error)) = contents {
                // Out of descriptors: the file is not at fault. It goes back to the inbox and is
                // claimed again after a delay; if that fails too, it stays claimed and unread.
                if (try? spool.unclaim(workName, to: entry.name, in: folder)) != nil {
                    ending = .failed(error)
                    return nil
                }
            }
            let previous = spool.adoptReleasedState(named: entry.name, in: folder, as: workName)
            ending = .claimed(workName: workName, previous: previous, contents: contents)
            return nil
        } catch {
            ending = .failed(error)
            return error
        }
    }
}
