import Glibc

/// An inbox job's start as one worker request (issue 23: two loop ↔ worker hand-offs a small
/// job, one to start and one to finish): the claim (`SpoolClaim`), then, for a fresh job whose
/// file parses, passes the protocol check and names its class, its first download's output name
/// taken (`PartReservation`) with the config the loop had when it sent the request. Anything
/// else (a released state, an invalid job, a name not free at once) leaves the name to the
/// download's own reservation, as before.
final class JobClaim: WorkerTask {
    let entry: Spool.InboxEntry
    let request: Request
    /// How the claim ended, read on the loop once the batch is back.
    private(set) var ending: SpoolClaim.Ending = .gone
    /// The first download's `.part`, taken in the same request; nil when it is left for later.
    private(set) var firstPart: FirstPart?
    /// A destination root the worker opened, for the loop to keep (`OutputNames.adopt`).
    private(set) var openedRoot: (path: String, root: DirectoryHandle)?

    /// A `.part` taken with the claim, and what it was taken under.
    struct FirstPart {
        let part: PartFile
        /// The destination root the part was taken under: the job keeps this one (`Job.destination`).
        let root: DirectoryHandle
        let className: String
        /// The job as the worker accepted it under the request's config, for admission to take
        /// while that config is still in force (one check a job, not two).
        let accepted: JobAcceptance
        /// `OutputNames.generation` when the request was made: a reload since makes the part stale.
        let generation: Int
    }

    /// `now`: the agent clock's wall seconds, against which released hints are checked.
    init(_ entry: Spool.InboxEntry, in spool: Spool, limit: Int64, adoptsReleasedState: Bool = true,
         known: JobFileReader.Contents? = nil, naming: Naming?, now: Int64) {
        self.entry = entry
        request = Request(claim: SpoolClaim.Request(entry: entry, spool: spool.claiming, limit: limit, now: now,
                                                    adoptsReleasedState: adoptsReleasedState, known: known), naming: naming)
    }

    func received(_ answer: Answer) -> SystemError? {
        ending = answer.ending
        openedRoot = answer.openedRoot
        if let taken = answer.firstPart {
            firstPart = FirstPart(part: PartFile(handedOver: taken.part), root: taken.root, className: taken.accepted.className,
                                  accepted: taken.accepted, generation: request.naming?.generation ?? -1)
        }
        if case .failed(let error) = answer.ending { return error }
        return nil
    }

    /// The claim's ending and, when it was taken, the first download's part as `Sendable` values.
    struct Answer: Sendable {
        let ending: SpoolClaim.Ending
        let firstPart: Taken?
        /// A destination root the worker opened, for the loop to keep (`OutputNames.adopt`).
        let openedRoot: (path: String, root: DirectoryHandle)?
    }

    struct Taken: Sendable {
        let part: PartFile.HandedOver
        let root: DirectoryHandle
        let accepted: JobAcceptance
    }

    /// What the worker needs to take a name as `OutputNames.reservation` would: the config, the
    /// destination roots the loop has open, the default destination and the records' key.
    struct Naming: Sendable {
        let shared: Config.Shared
        let roots: [String: DirectoryHandle]
        let defaultDestination: String
        let key: RecordKey
        let generation: Int
    }

    struct Request: WorkerRequest {
        let claim: SpoolClaim.Request
        let naming: Naming?

        func perform() -> Answer {
            var ending = claim.perform()
            // The job file is parsed here, off the loop, at most once: admission takes the spec along.
            if case .claimed(let workName, let previous, .success(var contents)) = ending {
                _ = contents.parse()
                ending = .claimed(workName: workName, previous: previous, contents: .success(contents))
            }
            guard let naming, case .claimed(_, nil, .success(let contents)) = ending,
                  let (taken, opened) = reserveFirst(contents, naming) else {
                return Answer(ending: ending, firstPart: nil, openedRoot: nil)
            }
            return Answer(ending: ending, firstPart: taken, openedRoot: opened)
        }

        /// The first download's name taken under `naming`, when the job is one `JobIntake.admit`
        /// accepts as it is (`JobAcceptance`); nil for anything it would refuse or handle otherwise.
        private func reserveFirst(_ contents: JobFileReader.Contents, _ naming: Naming)
            -> (Taken, (path: String, root: DirectoryHandle)?)? {
            let shared = naming.shared
            guard case .success(let spec) = contents.parsed, let download = spec.downloads.first,
                  case .success(let accepted) = JobAcceptance.check(spec, folder: claim.entry.folder, config: shared.config)
            else { return nil }
            let jobClass = accepted.jobClass
            let path = jobClass?.destination.map(Agent.absolute) ?? naming.defaultDestination
            let subfolder: String
            do {
                subfolder = try download.subfolder(in: path) ?? ""
            } catch {
                return nil
            }
            var opened: (path: String, root: DirectoryHandle)?
            let root: DirectoryHandle
            if let open = naming.roots[path] {
                root = open
            } else {
                guard let made = try? DirectoryHandle.openRoot(path, create: true) else { return nil }
                root = made
                opened = (path, made)
            }
            let reservation = PartReservation.Request(
                root: root, subfolder: subfolder, dir: download.dir,
                name: download.out ?? FileName.fromURL(download.urls[0]),
                owner: PartOwner(job: claim.entry.name, claim: contents.inode), onConflict: shared.config.onConflict,
                digest: shared.config.digest, mode: shared.config.fileMode, durable: shared.config.fsync, key: naming.key, distrustsData: false,
                earlier: nil, siblings: [])
            guard case .reserved(let part) = reservation.perform() else { return nil }
            return (Taken(part: part, root: root, accepted: accepted), opened)
        }
    }
}
