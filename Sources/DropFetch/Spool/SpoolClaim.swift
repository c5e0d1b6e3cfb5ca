import Glibc

/// One inbox job's claim as a single step on the group commit's worker (docs/spool.md, claim
/// protocol): renamed into the work folder (`Spool.claim`) from its routing folder's descriptor,
/// its released hints taken up (`ReleasedState`), and the job file read. The rename and the read
/// look names up in the work folder, whose blocks the worker's fsyncs keep under write I/O; on the
/// loop that stalled every transfer.
enum SpoolClaim {
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

    /// The claim as the worker runs it (`JobClaim` sends it): the entry, and what `Spool.Claiming`
    /// holds of the spool (its fixed paths, its folder handles and its crash plan).
    struct Request: WorkerRequest {
        let entry: Spool.InboxEntry
        let spool: Spool.Claiming
        let limit: Int64
        /// The agent clock's wall seconds when the loop asked: released hints are never after it.
        let now: Int64
        /// The inbox listing or its watch showed a released state beside the job: it is read and
        /// taken up. Without one, none is looked for (two opens a job answered ENOENT).
        var adoptsReleasedState = true
        /// The job file as the inbox index read it: taken as the claimed job's contents when the
        /// claimed file is still that one (same inode, size and mtime, one link, a regular file),
        /// instead of opening and reading it again.
        var known: JobFileReader.Contents?

        func perform() -> Ending {
            let folder: DirectoryHandle
            do {
                folder = try spool.routingFolder(entry.folder)
            } catch {
                switch error.code {
                case ENOENT: return .gone
                case ELOOP, ENOTDIR: return .notFollowed(error)
                default: return .failed(error)
                }
            }
            do {
                // A kill right after the move must not lose the job's routing folder (its class and
                // priority; where hold and release put it) nor its released hints.
                let hints = adoptsReleasedState ? spool.releasedState(named: entry.name, in: folder, now: now) : nil
                let state = spool.claimState(of: entry.name, from: entry.folder, hints: hints, now: now)
                guard let workName = try spool.claim(entry.name, from: folder, state: state, now: now) else { return .gone }
                spool.crashPlan?.reach(.claimed)
                let contents = known.flatMap { spool.stillReads($0, as: workName) }.map { .success($0) }
                    ?? spool.readClaimedJob(workName, limit: limit)
                if case .failure(.transient(let error)) = contents {
                    // Out of descriptors: the file is not at fault. It goes back to the inbox and is
                    // claimed again after a delay; if that fails too, it stays claimed and unread.
                    if (try? spool.unclaim(workName, to: entry.name, in: folder)) != nil {
                        try? FileSystem.removeIfPresent(spool.work + "/" + Spool.stateName(forJob: workName))
                        return .failed(error)
                    }
                }
                // The hints went into the state with the claim; the inbox's copy is not needed.
                if hints != nil { try? folder.removeIfPresent(Spool.releasedStateName(forJob: entry.name)) }
                let previous = hints != nil ? state : nil
                return .claimed(workName: workName, previous: previous, contents: contents)
            } catch {
                return .failed(error)
            }
        }
    }
}
