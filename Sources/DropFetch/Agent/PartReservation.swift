import Glibc

/// A download's output name chosen and taken (docs/spool.md, invariant 6) as one step on a worker:
/// the folder below the destination root opened (created), the names tried under `on_conflict`, the
/// `.part` created with O_EXCL and its resume record written. Each creation takes the destination
/// folder's lock and, on a busy disk, can wait milliseconds for its blocks; on the loop that
/// stalled every transfer (`OutputNames.reservation` makes one, `JobRunner` runs it).
final class PartReservation: WorkerTask {
    private let root: DirectoryHandle
    private let subfolder: String
    private let dir: String?
    private let name: String
    private let owner: PartOwner
    private let onConflict: Config.ConflictPolicy
    private let digest: Config.DigestChoice
    private let mode: UInt32
    private let durable: Bool
    private let key: RecordKey
    /// How it ended, read on the loop once the batch is back.
    private(set) var choice: OutputNames.NameChoice = .failed(Failure(.internal, "the output name was not chosen"))

    init(root: DirectoryHandle, subfolder: String, dir: String?, name: String, owner: PartOwner,
         onConflict: Config.ConflictPolicy, digest: Config.DigestChoice, mode: UInt32, durable: Bool, key: RecordKey) {
        self.root = root
        self.subfolder = subfolder
        self.dir = dir
        self.name = name
        self.owner = owner
        self.onConflict = onConflict
        self.digest = digest
        self.mode = mode
        self.durable = durable
        self.key = key
    }

    func perform() -> SystemError? {
        choice = choose()
        return nil
    }

    private func choose() -> OutputNames.NameChoice {
        let folder: DirectoryHandle
        do {
            folder = try root.descend(subfolder, create: true)
        } catch {
            return .failed(OutputNames.folderFailure(error, dir: dir))
        }
        do {
            for candidate in OutputNames.variants(of: name) {
                if let final = try folder.status(candidate) {
                    if try OutputNames.isPublished(candidate, final, in: folder, by: owner, key: key) {
                        // Under `digest: none` the status file has no SHA-256 and none of the file is read.
                        let sha256 = digest == .sha256 ? try OutputNames.sha256(of: candidate, final, in: folder) : nil
                        let recordName = ResumeRecord.name(forPart: PartFile.partName(for: candidate))
                        let record = (folder, recordName, PartFile.readRecord(recordName, in: folder, key: key))
                        return .published(file: folder.path + "/" + candidate, bytes: Int64(final.st_size), sha256: sha256,
                                          record: record)
                    }
                    switch onConflict {
                    case .fail: return .failed(Failure(.exists, "\(folder.path)/\(candidate) already exists (on_conflict: fail)"))
                    case .rename: continue
                    case .overwrite: break
                    }
                }
                switch try PartFile.reserve(candidate, in: folder, for: owner, mode: mode, durable: durable, key: key) {
                case .ours(let part):
                    return .reserved(part)
                case .obstructed(let reason):
                    // Nobody's to wait for: `rename` takes the next name, the others fail.
                    if onConflict == .rename { continue }
                    return .failed(Failure(.exists, reason))
                case .taken(let other):
                    switch onConflict {
                    case .rename: continue
                    case .fail: return .failed(Failure(.exists, "\(folder.path)/\(candidate) is being downloaded by \(other) (on_conflict: fail)"))
                    case .overwrite: return .ownerBusy(other)
                    }
                }
            }
        } catch {
            return .failed(Failure(error.isNoSpace ? .noSpace : .internal, error.description))
        }
        return .failed(Failure(.exists, "no free name for \(name) in \(folder.path)"))
    }

    /// A reservation whose job left while it ran: the `.part` it took is kept for the job if the job
    /// waits in hold/ or the inbox (or was claimed again), else removed with its record.
    func release(keeping keep: Bool) {
        if case .reserved(let part) = choice, !keep { part.discard() }
    }
}
