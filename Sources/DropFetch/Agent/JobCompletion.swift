import Glibc

/// The end of jobs whose last transfer completed, as one worker step for all the jobs a loop turn
/// finished (issue 23: one request per phase): each job's data made durable, its `.part` given
/// its final name under `on_conflict`, the destination folder durable, its status written and
/// filed with the job file beside it, and the spool folders durable. The jobs of a batch pass each
/// phase together, so every folder is synced once per batch, while each job's durable events keep
/// the order of the finish protocol (docs/spool.md); with `fsync: false` the syncs are left out.
/// Before, the same end took five round trips between the loop and two workers.
final class JobCompletion: WorkerTask {
    /// One job whose last unfinished download's transfer completed.
    struct Request {
        let part: PartFile
        /// The rename under `on_conflict`, with the folder checked to be still below the root.
        let publication: PartPublication
        /// The job's final record, the download at `index` done; its `file` is set to the
        /// published name once the rename chose it.
        let record: StatusRecord
        let index: Int
        let filing: SpoolFiling.Plan
        /// The records beside files this job published earlier, and this part's own.
        let publishedRecords: [(folder: DirectoryHandle, name: String)]
        /// done/ (or failed/) and the work folder, synced after the moves.
        let spoolFolders: [DirectoryHandle]
    }

    enum Ending {
        /// Not published (data not durable, folder moved, name taken): nothing was filed.
        case notPublished(Failure)
        /// Published as `name`, then filed under `record`.
        case filed(name: String, record: StatusRecord, Spool.Filed)
        /// Published, but the job file left the work folder before it was filed (hold, cancel, mv).
        case left(name: String, record: StatusRecord)
        /// Published, but filing failed (ENOSPC, EIO): the job stays claimed and filing is retried.
        case filingFailed(name: String, record: StatusRecord, SystemError)
    }

    let requests: [Request]
    private let durable: Bool
    private let crashPlan: CrashPlan?
    /// One per request, read on the loop once the batch is back.
    private(set) var endings: [Ending]
    /// Syncs of folders that failed after their renames: reported on the loop, not undone.
    private(set) var unsynced: [SystemError] = []

    init(_ requests: [Request], durable: Bool, crashPlan: CrashPlan?) {
        self.requests = requests
        self.durable = durable
        self.crashPlan = crashPlan
        endings = Array(repeating: .notPublished(Failure(.internal, "not completed")), count: requests.count)
    }

    func perform() -> SystemError? {
        var names: [Int: String] = [:]
        for (index, request) in requests.enumerated() {
            if durable {
                do {
                    _ = try retryingEINTR("fsync", request.part.file.path) { fsync(request.part.file.rawValue) }
                } catch {
                    endings[index] = .notPublished(Failure(PartPublication.kind(of: error), error.description))
                    continue
                }
            }
            crashPlan?.reach(.dataComplete)
            _ = request.publication.perform()
            switch request.publication.ending {
            case .published(let name): names[index] = name
            case .failed(let failure): endings[index] = .notPublished(failure)
            }
        }
        syncFolders(names.keys.sorted().map { requests[$0].part.folder })
        var staged: [Int: SpoolFiling] = [:]
        for index in names.keys.sorted() {
            crashPlan?.reach(.published)
            let request = requests[index]
            var record = request.record
            let name = names[index]!
            record.downloads[request.index].file = request.part.folder.path + "/" + name
            let filing = SpoolFiling(record, plan: request.filing, publishedRecords: request.publishedRecords)
            do {
                try AtomicFile.writeTemp(record.encoded(), at: filing.temp, mode: 0o644, durable: durable)
                staged[index] = filing
            } catch {
                try? FileSystem.removeIfPresent(filing.temp)
                endings[index] = .filingFailed(name: name, record: record, error)
            }
        }
        var filed: [Int] = []
        for index in staged.keys.sorted() {
            let filing = staged[index]!
            _ = filing.perform()
            let name = names[index]!
            switch filing.ending {
            case .filed(let done):
                endings[index] = .filed(name: name, record: filing.status, done)
                filed.append(index)
            case .left: endings[index] = .left(name: name, record: filing.status)
            case .failed(let error): endings[index] = .filingFailed(name: name, record: filing.status, error)
            }
        }
        syncFolders(filed.flatMap { requests[$0].spoolFolders })
        return nil
    }

    /// fsync(2) of each folder once (by device and inode), when the spool is durable.
    private func syncFolders(_ folders: [DirectoryHandle]) {
        guard durable else { return }
        var seen = Set<[UInt64]>()
        for folder in folders where seen.insert([folder.device, folder.inode]).inserted {
            do {
                _ = try retryingEINTR("fsync", folder.path) { fsync(folder.descriptor) }
            } catch {
                unsynced.append(error)
            }
        }
    }
}
