import Glibc

/// The end of jobs whose last transfer completed, as one worker step for all the jobs a loop turn
/// finished (issue 23: one request per phase): each job's data made durable, its `.part` given
/// its final name under `on_conflict`, the destination folder durable, its status written and
/// filed with the job file beside it, and the spool folders durable. The jobs of a batch pass each
/// phase together, so every folder is synced once per batch, while each job's durable events keep
/// the order of the finish protocol (docs/spool.md); with `fsync: false` the syncs are left out.
/// Before, the same end took five round trips between the loop and two workers.
final class JobCompletion: WorkerTask {
    /// One job whose last unfinished download's transfer completed, as the worker gets it.
    struct Item: Sendable {
        /// The `.part`, synced before it is renamed.
        let data: FileDescriptor
        /// The rename under `on_conflict`, with the folder checked to be still below the root.
        let publication: PartPublication.Request
        /// Which download of the job's record is the one published.
        let index: Int
        /// The filing under the job's final record (the download at `index` done); its `file` is
        /// set to the published name once the rename chose it.
        let filing: SpoolFiling.Request
        /// done/ (or failed/) and the work folder, synced after the moves.
        let spoolFolders: [DirectoryHandle]
    }

    enum Ending: Sendable {
        /// Not published (data not durable, folder moved, name taken): nothing was filed.
        case notPublished(Failure)
        /// Published as `name`, then filed under `record`.
        case filed(name: String, record: StatusRecord, Spool.Filed)
        /// Published, but the job file left the work folder before it was filed (hold, cancel, mv).
        case left(name: String, record: StatusRecord)
        /// Published, but filing failed (ENOSPC, EIO): the job stays claimed and filing is retried.
        case filingFailed(name: String, record: StatusRecord, SystemError)
    }

    struct Answer: Sendable {
        /// One per item, in order.
        var endings: [Ending]
        /// Syncs of folders that failed after their renames: reported on the loop, not undone.
        var unsynced: [SystemError] = []
    }

    let request: Request
    /// How each job's completion ended, kept on the loop once the batch is back.
    private(set) var endings: [Ending]
    private(set) var unsynced: [SystemError] = []

    init(_ items: [Item], durable: Bool, crashPlan: CrashPlan?) {
        request = Request(items: items, durable: durable, crashPlan: crashPlan)
        endings = Array(repeating: .notPublished(Failure(.internal, "not completed")), count: items.count)
    }

    func received(_ answer: Answer) -> SystemError? {
        endings = answer.endings
        unsynced = answer.unsynced
        return nil
    }

    struct Request: WorkerRequest {
        let items: [Item]
        let durable: Bool
        let crashPlan: CrashPlan?

        func perform() -> Answer {
            var answer = Answer(endings: Array(repeating: .notPublished(Failure(.internal, "not completed")), count: items.count))
            var names: [Int: String] = [:]
            for (index, item) in items.enumerated() {
                if durable {
                    do {
                        _ = try retryingEINTR("fsync", item.data.path) { fsync(item.data.rawValue) }
                    } catch {
                        answer.endings[index] = .notPublished(Failure(PartPublication.kind(of: error), error.description))
                        continue
                    }
                }
                crashPlan?.reach(.dataComplete)
                switch item.publication.perform() {
                case .published(let name): names[index] = name
                case .failed(let failure): answer.endings[index] = .notPublished(failure)
                }
            }
            let published = names.keys.sorted()
            syncFolders(published.map { items[$0].publication.part.folder }, &answer)
            var staged: [Int: SpoolFiling.Request] = [:]
            for index in published {
                crashPlan?.reach(.published)
                let item = items[index]
                let name = names[index]!
                var record = item.filing.status
                record.downloads[item.index].file = item.publication.part.folder.path + "/" + name
                let filing = item.filing.filing(record)
                do {
                    try AtomicFile.writeTemp(record.encoded(), at: filing.temp, mode: 0o644, durable: durable)
                    staged[index] = filing
                } catch {
                    try? FileSystem.removeIfPresent(filing.temp)
                    answer.endings[index] = .filingFailed(name: name, record: record, error)
                }
            }
            var filed: [Int] = []
            for index in staged.keys.sorted() {
                let filing = staged[index]!
                let name = names[index]!
                switch filing.perform() {
                case .filed(let done):
                    answer.endings[index] = .filed(name: name, record: filing.status, done)
                    filed.append(index)
                case .left: answer.endings[index] = .left(name: name, record: filing.status)
                case .failed(let error): answer.endings[index] = .filingFailed(name: name, record: filing.status, error)
                }
            }
            syncFolders(filed.flatMap { items[$0].spoolFolders }, &answer)
            return answer
        }

        /// fsync(2) of each folder once (by device and inode), when the spool is durable.
        private func syncFolders(_ folders: [DirectoryHandle], _ answer: inout Answer) {
            guard durable else { return }
            var seen = Set<[UInt64]>()
            for folder in folders where seen.insert([folder.device, folder.inode]).inserted {
                do {
                    _ = try retryingEINTR("fsync", folder.path) { fsync(folder.descriptor) }
                } catch {
                    answer.unsynced.append(error)
                }
            }
        }
    }
}
