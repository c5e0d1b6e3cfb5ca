import Glibc

/// A download's output name chosen and taken (docs/spool.md, invariant 6) as one step on a worker:
/// the folder below the destination root opened (created), the names tried under `on_conflict`, the
/// `.part` created with O_EXCL and its resume record written. Each creation takes the destination
/// folder's lock and, on a busy disk, can wait milliseconds for its blocks; on the loop that
/// stalled every transfer (`OutputNames.reservation` makes one, `JobRunner` runs it).
final class PartReservation: WorkerTask {
    let request: Request
    /// How it ended, kept on the loop once the batch is back.
    private(set) var choice: OutputNames.NameChoice = .failed(Failure(.internal, "the output name was not chosen"))

    init(root: DirectoryHandle, subfolder: String, dir: String?, name: String, owner: PartOwner,
         onConflict: Config.ConflictPolicy, digest: Config.DigestChoice, mode: UInt32, durable: Bool, key: RecordKey,
         distrustsData: Bool = false, earlier: EarlierName? = nil, siblings: [SetAsidePart] = []) {
        request = Request(root: root, subfolder: subfolder, dir: dir, name: name, owner: owner, onConflict: onConflict,
                          digest: digest, mode: mode, durable: durable, key: key, distrustsData: distrustsData,
                          earlier: earlier, siblings: siblings)
    }

    /// The name a download chose before this reservation: tried first (invariant 6: it stays the
    /// job's), and its part removed if the download takes another name or ends, since it is this
    /// job's and nothing else would ever clear it (a name whose `.part` names a filed job stays
    /// taken). Before, a job stopped or interrupted with partial data under `x.1.iso` took `x.iso`
    /// when that was free by its next run: it started over, and left its `.part` behind for good.
    enum EarlierName: Sendable {
        /// Closed while the download waited for a descriptor, in this run.
        case setAside(SetAsidePart)
        /// The final file name an earlier run recorded in the job's state (a stop, a crash, a
        /// hold): used only when its `.part` in the folder proves, by its sealed record or mark,
        /// to be this job's.
        case recorded(name: String)

        /// The final name to try first in `folder`.
        func name(in folder: DirectoryHandle, owner: PartOwner, key: RecordKey) -> String? {
            switch self {
            case .setAside(let part):
                part.isIn(folder) ? part.finalName : nil
            case .recorded(let name):
                EarlierName.ownsPart(of: name, in: folder, owner: owner, key: key) ? name : nil
            }
        }

        func isAt(_ location: PartFile.Location) -> Bool {
            switch self {
            case .setAside(let part): part.isAt(location)
            case .recorded(let name): location.finalName == name
            }
        }

        /// Whether it is the file `part` reopened (the set-aside part's st_dev and inode), wherever it was found.
        func isFile(of part: PartFile) -> Bool {
            guard case .setAside(let earlier) = self else { return false }
            return earlier.inode == part.record.part && earlier.folderDevice == part.folder.device && earlier.name == part.name
        }

        /// Gives the earlier name up: its part is removed if it is still this owner's (a recorded
        /// one only where it lies in `folder`).
        func remove(in folder: DirectoryHandle?, owner: PartOwner, key: RecordKey) {
            switch self {
            case .setAside(let part):
                part.remove()
            case .recorded(let name):
                guard let folder, EarlierName.ownsPart(of: name, in: folder, owner: owner, key: key) else { return }
                PartFile.Location(folder: folder, name: PartFile.partName(for: name), finalName: name).remove()
            }
        }

        private static func ownsPart(of name: String, in folder: DirectoryHandle, owner: PartOwner, key: RecordKey) -> Bool {
            guard DirectoryHandle.isPlainComponent(name) else { return false }
            return PartFile.readOwner(ofPart: PartFile.partName(for: name), in: folder, key: key)?.isOwned(by: owner) == true
        }
    }

    /// Whether the download's earlier name is still its own once the answer is back: the download
    /// waits (for the name's owner, a descriptor, free space) and tries again. Otherwise the worker
    /// reopened its part as the one reserved, or removed it.
    private(set) var keepsEarlier = false

    /// The part taken on the worker becomes the loop's `PartFile` here.
    func received(_ answer: Answer) -> SystemError? {
        keepsEarlier = request.earlier != nil && answer.keepsEarlier
        switch answer {
        case .reserved(let part): choice = .reserved(PartFile(handedOver: part))
        case .published(let file, let bytes, let sha256, let record):
            choice = .published(file: file, bytes: bytes, sha256: sha256, record: record)
        case .ownerBusy(let owner): choice = .ownerBusy(owner)
        case .noDescriptors(let error): choice = .noDescriptors(error)
        case .failed(let failure): choice = .failed(failure)
        }
        return nil
    }

    /// `OutputNames.NameChoice` on its way back from the worker: the part as `Sendable` values.
    enum Answer: Sendable {
        case reserved(PartFile.HandedOver)
        case published(file: String, bytes: Int64, sha256: String?, record: (folder: DirectoryHandle, name: String, record: ResumeRecord?))
        case ownerBusy(String)
        case noDescriptors(SystemError)
        case failed(Failure)

        /// `keepsEarlier`, as the worker acts on it.
        var keepsEarlier: Bool {
            switch self {
            case .ownerBusy, .noDescriptors: true
            case .failed(let failure): failure.kind == .noSpace
            case .reserved, .published: false
            }
        }
    }

    struct Request: WorkerRequest {
        let root: DirectoryHandle
        let subfolder: String
        let dir: String?
        let name: String
        let owner: PartOwner
        let onConflict: Config.ConflictPolicy
        let digest: Config.DigestChoice
        let mode: UInt32
        let durable: Bool
        let key: RecordKey
        /// The job was adopted from an agent that may still be running elsewhere (DESIGN.md §10
        /// Fencing): its `.part` is replaced by a new file, which that agent never opened.
        let distrustsData: Bool
        let earlier: EarlierName?
        /// The parts the job's other downloads set aside: their owner is this job too, so
        /// `PartFile.reserve` would reopen them as this download's; they are taken instead.
        let siblings: [SetAsidePart]

        func perform() -> Answer {
            let folder: DirectoryHandle
            do {
                folder = try root.descend(subfolder, create: true)
            } catch {
                if DescriptorLimit.isShortage(error) { return .noDescriptors(error) }
                return settleEarlier(after: .failed(OutputNames.folderFailure(error, dir: dir)), in: nil)
            }
            let preferred = earlier?.name(in: folder, owner: owner, key: key)
            let answer: Answer
            do {
                answer = try choose(in: folder, preferring: preferred)
            } catch {
                if DescriptorLimit.isShortage(error) { return .noDescriptors(error) }
                answer = .failed(Failure(error.isNoSpace ? .noSpace : .internal, error.description))
            }
            return settleEarlier(after: answer, in: folder)
        }

        /// The earlier name once `answer` is known: kept while the download waits (`keepsEarlier`),
        /// else given up. `take` already reopened it or removed it for another name, and a
        /// published file's record stays until the job's status file names the file.
        private func settleEarlier(after answer: Answer, in folder: DirectoryHandle?) -> Answer {
            switch answer {
            case .reserved, .published: break
            default: if !answer.keepsEarlier { earlier?.remove(in: folder, owner: owner, key: key) }
            }
            return answer
        }

        /// The names under `on_conflict`, `preferred` first.
        private func choose(in folder: DirectoryHandle, preferring preferred: String?) throws(SystemError) -> Answer {
            if let preferred, let answer = try take(preferred, in: folder) { return answer }
            for candidate in OutputNames.variants(of: name) where candidate != preferred {
                if let answer = try take(candidate, in: folder) { return answer }
            }
            return .failed(Failure(.exists, "no free name for \(name) in \(folder.path)"))
        }

        /// This download's own part under `candidate`, closed while it waited in this run: it was
        /// created or vetted by this run's reservation, so its data is the job's to resume.
        private func ownSetAside(_ candidate: String, in folder: DirectoryHandle) -> SetAsidePart? {
            guard case .setAside(let part)? = earlier, part.isIn(folder), part.finalName == candidate else { return nil }
            return part
        }

        /// Takes `candidate`, or finds this job's published file under it; nil: the next name.
        private func take(_ candidate: String, in folder: DirectoryHandle) throws(SystemError) -> Answer? {
            let own = ownSetAside(candidate, in: folder)
            if own == nil, siblings.contains(where: { $0.isIn(folder) && $0.finalName == candidate }) {
                return taken(candidate, in: folder, by: "another download of \(owner.job)")
            }
            if let final = try folder.status(candidate) {
                if try OutputNames.isPublished(candidate, final, in: folder, by: owner, key: key) {
                    // Under `digest: none` the status file has no SHA-256 and none of the file is read.
                    let sha256 = digest == .sha256 ? try OutputNames.sha256(of: candidate, final, in: folder) : nil
                    let recordName = ResumeRecord.name(forPart: PartFile.partName(for: candidate))
                    let record = (folder, recordName, PartFile.readRecord(recordName, in: folder, key: key))
                    return .published(file: FileSystem.join(folder.path, candidate), bytes: Int64(final.st_size), sha256: sha256,
                                      record: record)
                }
                switch onConflict {
                case .fail: return .failed(Failure(.exists, "\(folder.path)/\(candidate) already exists (on_conflict: fail)"))
                // The download's own part with data keeps it: its publication takes the next free
                // name, as it would have had the part stayed open while the download waited. An
                // empty one moves on to the next free name now.
                case .rename: if own?.holdsData != true { return nil }
                case .overwrite: break
                }
            }
            var reservation = try reserve(candidate, in: folder, own: own)
            if distrustsData, case .ours(let found) = reservation, !found.isUntouched, found.record.part != own?.inode {
                // A write of the fenced owner may still land in that file: a new one starts from 0.
                found.discard()
                reservation = try PartFile.reserve(candidate, in: folder, for: owner, mode: mode, durable: durable, key: key)
            }
            switch reservation {
            case .ours(let part):
                if let own { part.restore(record: own.record) }
                if let earlier, !earlier.isAt(part.location), !earlier.isFile(of: part) { earlier.remove(in: folder, owner: owner, key: key) }
                return .reserved(part.handOver())
            case .obstructed(let reason):
                // Nobody's to wait for: `rename` takes the next name, the others fail.
                if onConflict == .rename { return nil }
                return .failed(Failure(.exists, reason))
            case .taken(let other):
                // Its own part, still locked through a descriptor a step holds (a sync of its data):
                // waited for while that descriptor is open, never left behind for another name.
                if let own, own.mayStillBeLocked, try holds(own, in: folder) {
                    return .ownerBusy("this job (its part is still in use)")
                }
                return taken(candidate, in: folder, by: other)
            }
        }

        /// `PartFile.reserve`, with the download's own part found locked just as its old
        /// descriptor goes (its last reference dropped, close(2) not made yet) looked at again, at
        /// most three times 0.1 ms apart.
        private func reserve(_ candidate: String, in folder: DirectoryHandle, own: SetAsidePart?) throws(SystemError) -> PartFile.Reservation {
            var reservation = try PartFile.reserve(candidate, in: folder, for: owner, mode: mode, durable: durable, key: key)
            guard let own else { return reservation }
            for _ in 0..<3 {
                guard case .taken = reservation, !own.mayStillBeLocked, try holds(own, in: folder) else { break }
                usleep(100)
                reservation = try PartFile.reserve(candidate, in: folder, for: owner, mode: mode, durable: durable, key: key)
            }
            return reservation
        }

        /// Whether the name still holds the part set aside (its inode).
        private func holds(_ own: SetAsidePart, in folder: DirectoryHandle) throws(SystemError) -> Bool {
            try folder.status(own.name).map { UInt64($0.st_ino) } == own.inode
        }

        /// `candidate` while another owns its part: the next name, a failure or a wait, as `on_conflict` says.
        private func taken(_ candidate: String, in folder: DirectoryHandle, by other: String) -> Answer? {
            switch onConflict {
            case .rename: nil
            case .fail: .failed(Failure(.exists, "\(folder.path)/\(candidate) is being downloaded by \(other) (on_conflict: fail)"))
            case .overwrite: .ownerBusy(other)
            }
        }
    }

    /// A reservation whose job left while it ran: the `.part` it took is kept for the job if the job
    /// waits in hold/ or the inbox (or was claimed again), else removed with its record, and so is
    /// a part set aside that the answer left on disk.
    func release(keeping keep: Bool) {
        guard !keep else { return }
        if case .reserved(let part) = choice { part.discard() }
        if keepsEarlier { request.earlier?.remove(in: nil, owner: request.owner, key: request.key) }
    }
}
