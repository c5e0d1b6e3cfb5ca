/// One inbox job's claim as a single step on the group commit's worker (docs/spool.md, claim
/// protocol): renamed into the work folder (`Spool.claim`), its released state file taken along,
/// and the job file read. The rename and the read look names up in the work folder, whose blocks
/// the worker's fsyncs keep under write I/O; on the loop that stalled every transfer.
final class SpoolClaim: WorkerTask {
    /// How the claim ended, read on the loop once the batch is back.
    enum Ending {
        /// In the work folder as `workName`; `previous` is the state a release left in the inbox.
        case claimed(workName: String, previous: StatusRecord?, contents: Result<JobFileReader.Contents, JobFileError>)
        /// Gone from the inbox: another agent claimed it, or it was removed.
        case gone
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
    /// fixed paths and its crash plan.
    func perform() -> SystemError? {
        do {
            guard let workName = try spool.claim(entry) else {
                ending = .gone
                return nil
            }
            spool.crashPlan?.reach(.claimed)
            let previous = spool.adoptReleasedState(of: entry.relativePath, as: workName)
            ending = .claimed(workName: workName, previous: previous,
                              contents: JobFileReader.contents(of: spool.work + "/" + workName, limit: limit))
            return nil
        } catch {
            ending = .failed(error)
            return error
        }
    }
}
