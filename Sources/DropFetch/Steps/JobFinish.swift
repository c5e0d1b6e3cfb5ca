import Glibc

/// Every end of a job or of one of its downloads, as one worker request for all the ends asked
/// for while the batch before was away (issue 34, one finish path; `FinishBatch`): the parts that
/// completed made durable and given their final names under `on_conflict` (0 for a job that
/// failed, was refused or is filed again), their folders durable, then, when the request ends the
/// job, its status written and filed with the job file beside it and the spool folders durable.
/// The items of a batch pass each phase together, so every folder is synced once per batch, while
/// each item's durable events keep the order of the finish protocol (docs/spool.md); with
/// `fsync: false` the syncs are left out.
final class JobFinish: WorkerTask {
    /// A complete `.part` to publish.
    struct Part: Sendable {
        /// The `.part`, synced before it is renamed.
        let data: FileDescriptor
        /// The rename under `on_conflict`, with the folder checked to be still below the root.
        let publication: PartPublication.Request
        /// Which download of the job's record it is.
        let index: Int
    }

    /// One end, as the worker gets it.
    struct Item: Sendable {
        /// Published first; when it cannot be, nothing of the item is filed.
        let part: Part?
        /// The job's filing under its final record (the published part's `file` set to the name
        /// the rename chose); nil when the job goes on (another download is still open).
        let filing: SpoolFiling?
        /// done/ (or failed/) and the work folder, synced after the moves.
        let spoolFolders: [DirectoryHandle]
    }

    enum Ending: Sendable {
        /// The part was not published (data not durable, folder moved, name taken): nothing was filed.
        case notPublished(Failure)
        /// The part was published under `name` and no filing was asked for.
        case published(name: String)
        /// The part (if any) published as `name`, then the job filed under `record`.
        case filed(name: String?, record: StatusRecord, Spool.Filed)
        /// Published, but the job file left the work folder before it was filed (hold, cancel, mv).
        case left(name: String?, record: StatusRecord)
        /// Published, but filing failed (ENOSPC, EIO): the job stays claimed and filing is retried.
        case filingFailed(name: String?, record: StatusRecord, SystemError)
    }

    struct Answer: Sendable {
        /// One per item, in order.
        var endings: [Ending]
        /// Syncs of folders that failed after their renames: reported on the loop, not undone.
        var unsynced: [SystemError] = []
    }

    private(set) var request: Request
    /// How each item ended, kept on the loop once the batch is back.
    private(set) var endings: [Ending]
    private(set) var unsynced: [SystemError] = []
    /// Whether the worker's answer is here: the next batch may go (`FinishBatch`).
    private(set) var isAnswered = false

    /// Item `position`'s ending, for its handler's step; the item and the ending are let go here,
    /// so that a batch of hundreds of ends is freed one step at a time, not in the last step
    /// (a 6 ms loop turn in P2 with fsync on).
    func takeEnding(_ position: Int) -> Ending {
        // Every item has a part or a filing: one with neither was taken already.
        assert(request.items[position].part != nil || request.items[position].filing != nil, "an end taken twice")
        let ending = endings[position]
        endings[position] = .published(name: "")
        request.items[position] = Item(part: nil, filing: nil, spoolFolders: [])
        return ending
    }

    init(_ items: [Item], durable: Bool, crashPlan: CrashPlan?, fence: Fence? = nil) {
        request = Request(items: items, durable: durable, crashPlan: crashPlan, fence: fence)
        endings = Array(repeating: JobFinish.unfinished, count: items.count)
    }

    /// The ending of an item the worker never reached, made once (a `Failure` escapes its message).
    fileprivate static let unfinished = Ending.notPublished(Failure(.internal, "not finished"))

    func received(_ answer: Answer) -> SystemError? {
        isAnswered = true
        endings = answer.endings
        unsynced = answer.unsynced
        return nil
    }

    /// Each folder once, by device and inode, in order.
    fileprivate static func distinct(_ folders: [DirectoryHandle]) -> [DirectoryHandle] {
        var seen = Set<[UInt64]>()
        return folders.filter { seen.insert([$0.device, $0.inode]).inserted }
    }

    struct Request: WorkerRequest {
        fileprivate(set) var items: [Item]
        let durable: Bool
        let crashPlan: CrashPlan?
        /// Asked before each publication and each filing: a fenced agent takes neither.
        let fence: Fence?

        /// Whether this agent may still take an irreversible step for its jobs (DESIGN.md §10).
        private var holdsLease: Bool { fence?.permits() ?? true }

        func perform() -> Answer {
            var answer = Answer(endings: Array(repeating: JobFinish.unfinished, count: items.count))
            // Every part's data durable before any is renamed: its writeback started for all, then
            // synced together where one syncfs can stand for their fsyncs (FileSystemSync).
            var dataErrors = [SystemError?](repeating: nil, count: items.count)
            if durable {
                let parts = items.indices.filter { items[$0].part != nil }
                for position in parts { items[position].part!.data.startWriteback() }
                let errors = FileSystemSync.sync(parts.map { items[$0].part!.data }).errors
                for (offset, position) in parts.enumerated() { dataErrors[position] = errors[offset] }
            }
            // For each item: nil when its part could not be published, else the name (nil without a part).
            var names = [String??](repeating: nil, count: items.count)
            for position in items.indices {
                guard holdsLease else {
                    answer.endings[position] = .notPublished(Failure(.internal, SyncWorker.fenced("").description))
                    continue
                }
                guard items[position].part != nil else {
                    names[position] = .some(nil)
                    continue
                }
                switch publish(items[position].part!, dataError: dataErrors[position]) {
                case .success(let name): names[position] = name
                case .failure(let failure): answer.endings[position] = .notPublished(failure)
                }
            }
            // In item order. A filing whose part was published files a copy of its record naming the part.
            var written: [(position: Int, record: StatusRecord, file: FileDescriptor)] = []
            for position in items.indices where names[position] != nil {
                let name = names[position]!
                if items[position].part != nil { crashPlan?.reach(.published) }
                guard let filing = items[position].filing else {
                    answer.endings[position] = .published(name: name ?? "")
                    continue
                }
                var record = filing.status
                // The record names the part under its target already: only another name is joined.
                if let name, let part = items[position].part, name != part.publication.target {
                    record.downloads[part.index].file = FileSystem.join(part.publication.part.folder.path, name)
                }
                do {
                    let file = try AtomicFile.createTemp(record.encoded(), at: filing.temp, mode: 0o644)
                    if durable { file.startWriteback() }
                    written.append((position, record, file))
                } catch {
                    answer.endings[position] = .filingFailed(name: name, record: record, error)
                }
            }
            // The staged records synced once all their writes are under way, with the folders the
            // parts were published in, together where they can be: both before any job is filed.
            var statusErrors: [SystemError?] = []
            if durable {
                let folders = JobFinish.distinct(items.indices.compactMap { names[$0] != nil ? items[$0].part?.publication.part.folder : nil })
                let errors = FileSystemSync.sync(written.map { .file($0.file) } + folders.map(FileSystemSync.Target.folder)).errors
                statusErrors = Array(errors.prefix(written.count))
                answer.unsynced += errors.dropFirst(written.count).compactMap { $0 }
            }
            var staged: [(position: Int, record: StatusRecord)] = []
            staged.reserveCapacity(written.count)
            for (offset, (position, record, _)) in written.enumerated() {
                if durable, let error = statusErrors[offset] {
                    try? FileSystem.removeIfPresent(items[position].filing!.temp)
                    answer.endings[position] = .filingFailed(name: names[position]!, record: record, error)
                    continue
                }
                staged.append((position, record))
            }
            // Their descriptors closed before the filings (a batch may hold hundreds).
            written.removeAll()
            var filed: [Int] = []
            for (position, record) in staged {
                let name = names[position]!
                let filing = items[position].filing!
                guard holdsLease else {
                    try? FileSystem.removeIfPresent(filing.temp)
                    answer.endings[position] = .filingFailed(name: name, record: record, SyncWorker.fenced(filing.source))
                    continue
                }
                switch filing.perform(recording: record) {
                case .filed(let done):
                    answer.endings[position] = .filed(name: name, record: record, done)
                    if durable { filed.append(position) }
                case .left: answer.endings[position] = .left(name: name, record: record)
                case .failed(let error): answer.endings[position] = .filingFailed(name: name, record: record, error)
                }
            }
            if durable { syncFolders(filed.flatMap { items[$0].spoolFolders }, &answer) }
            return answer
        }

        /// The part, whose data was made durable (or failed to be: `dataError`), renamed under
        /// `on_conflict`: the name chosen.
        private func publish(_ part: Part, dataError: SystemError?) -> Result<String, Failure> {
            if let dataError { return .failure(Failure(PartPublication.kind(of: dataError), dataError.description)) }
            crashPlan?.reach(.dataComplete)
            switch part.publication.perform() {
            case .published(let name): return .success(name)
            case .failed(let failure): return .failure(failure)
            }
        }

        /// Each folder synced once (by device and inode), together where they can be; asked for
        /// only when the spool is durable.
        private func syncFolders(_ folders: [DirectoryHandle], _ answer: inout Answer) {
            answer.unsynced += FileSystemSync.sync(JobFinish.distinct(folders).map(FileSystemSync.Target.folder)).errors.compactMap { $0 }
        }
    }
}
