import Glibc

/// A download's output name: chosen under `on_conflict` and taken on disk (PartFile), in the
/// destination of the job's class, reached through directory handles opened once.
final class OutputNames: AgentPart {
    let context: AgentContext
    /// Open destination roots by absolute path: files below them are reached through these.
    private var destinations: [String: DirectoryHandle] = [:]
    /// The root asked for last, one of `destinations`: most jobs go to one destination, and a
    /// path compared costs less than one hashed.
    private var lastRoot: (path: String, root: DirectoryHandle)?

    init(context: AgentContext) {
        self.context = context
    }

    /// Counts config reloads: a name taken under an older config (`JobClaim`) is not used.
    private(set) var generation = 0

    /// Forgets the open roots (a config reload may name other destinations).
    func closeRoots() {
        destinations.removeAll()
        lastRoot = nil
        generation += 1
    }

    /// Keeps a destination root a worker opened for `path` under config `generation`, unless one is
    /// open already or a reload came since (the folder at `path` may have been moved meanwhile).
    func adopt(_ root: DirectoryHandle, at path: String, generation: Int?) {
        if generation == self.generation, destinations[path] == nil { destinations[path] = root }
    }

    /// What a claim's worker needs to take the job's first output name itself (`JobClaim`).
    func claimNaming() -> JobClaim.Naming? {
        guard let key = spool.recordKey else { return nil }
        return JobClaim.Naming(shared: context.shared, roots: destinations, defaultDestination: context.destinationRoot,
                               key: key, generation: generation)
    }

    /// How choosing a download's output name ended.
    enum NameChoice {
        case reserved(PartFile)
        /// This job's file was published by an earlier run (proved by its resume record).
        case published(file: String, bytes: Int64, sha256: String?, record: (folder: DirectoryHandle, name: String, record: ResumeRecord?))
        /// `on_conflict: overwrite`: the name belongs to another job until it is filed.
        case ownerBusy(String)
        /// The agent was out of descriptors (EMFILE, ENFILE): not the job's fault, tried again.
        case noDescriptors(SystemError)
        case failed(Failure)
    }

    /// Picks and takes the output name under `on_conflict` (docs/spool.md, invariant 6): a name
    /// whose `.part` another job owns is never written; `rename` takes the next free one, `fail`
    /// fails with `exists`, `overwrite` waits for the owner. What is done here, on the loop, is
    /// only the destination root's lookup; the rest is the returned `PartReservation`'s, run on a
    /// worker (each creation there takes the folder's lock and can wait for its blocks).
    /// Why no reservation was made: the download fails, or its destination's folder found no
    /// descriptor (open(2): EMFILE, ENFILE), and it waits for one.
    enum Refusal: Error {
        case failed(Failure)
        case noDescriptors(SystemError)
    }

    func reservation(for download: Job.Download, of job: Job, siblings: [SetAsidePart] = []) -> Result<PartReservation, Refusal> {
        let subfolder: String
        let root: DirectoryHandle
        do {
            subfolder = try download.spec.subfolder(in: job.keptPath ?? destinationPath(of: job)) ?? ""
        } catch {
            return .failure(.failed(Failure(.invalidJob, "\(job.record.job): \(error)")))
        }
        do {
            root = try destinationRoot(of: job)
        } catch {
            // The roots are opened again after a config reload (`closeRoots`).
            if DescriptorLimit.isShortage(error) { return .failure(.noDescriptors(error)) }
            return .failure(.failed(OutputNames.rootFailure(error, path: destinationPath(of: job))))
        }
        // From its first reservation on, the job keeps this root through config reloads.
        job.keepDestination(root)
        guard let key = spool.recordKey else { return .failure(.failed(Failure(.internal, "the spool is not open"))) }
        return .success(PartReservation(
            root: root, subfolder: subfolder, dir: download.spec.dir,
            name: OutputNames.requestedName(of: download), owner: job.owner,
            onConflict: config.onConflict, digest: config.digest, mode: config.fileMode, durable: config.fsync,
            key: key, distrustsData: job.distrustsData, earlier: download.earlier, siblings: siblings))
    }

    /// The name a download asks for (`out=`, else the URL's file name): the first one tried.
    static func requestedName(of download: Job.Download) -> String {
        download.spec.out ?? FileName.fromURL(download.spec.urls[0])
    }

    /// The config's destination folder cannot be used (a refused symlink, no permission): the
    /// config's fault, not the job's, so `internal` rather than `invalid_job`.
    static func rootFailure(_ error: SystemError, path: String) -> Failure {
        Failure(error.isNoSpace ? .noSpace : .internal, "cannot use the destination folder \(path): \(error)")
    }

    static func folderFailure(_ error: SystemError, dir: String?) -> Failure {
        let kind: ErrorKind = error.code == ELOOP || error.code == ENOTDIR || error.code == EINVAL
            ? .invalidJob : (error.isNoSpace ? .noSpace : .internal)
        return Failure(kind, "cannot use the folder for dir=\(dir ?? ""): \(error)")
    }

    /// Whether `name` is the published file of `owner`: its `.part` is gone and the owner sealed
    /// on the file itself (OwnerMark, which the rename kept), or else the record left beside the
    /// name, says this job wrote the file with that inode. The mark first: every part has one
    /// where the file system keeps user attributes, and one that names another job settles it
    /// (a record beside it describes this file only if its part's owner wrote it).
    static func isPublished(_ name: String, _ final: stat, in folder: DirectoryHandle, by owner: PartOwner,
                            key: RecordKey) throws(SystemError) -> Bool {
        let partName = PartFile.partName(for: name)
        guard (final.st_mode & S_IFMT) == S_IFREG, try folder.status(partName) == nil else { return false }
        let inode = UInt64(final.st_ino)
        if let marked = PartFile.readMark(name, in: folder, key: key), marked.part == inode {
            return marked.isOwned(by: owner)
        }
        guard let record = PartFile.readRecord(ResumeRecord.name(forPart: partName), in: folder, key: key) else { return false }
        return record.isOwned(by: owner) && record.part == inode
    }

    /// The lower-case hex SHA-256 of the `final.st_size` bytes of file `name`.
    static func sha256(of name: String, _ final: stat, in folder: DirectoryHandle) throws(SystemError) -> String {
        // A file of the destination: a FIFO swapped in after the stat must not block (O_NONBLOCK).
        let file = try folder.open(name, flags: O_RDONLY | O_NONBLOCK)
        guard (try file.status().st_mode & S_IFMT) == S_IFREG else {
            throw SystemError(code: EINVAL, operation: "hash (not a regular file)", path: file.path)
        }
        let digest = Digest(.sha256)
        try digest.update(from: file, length: Int64(final.st_size))
        return digest.finalize()
    }

    /// The open destination root of a job's class (or the global one), opened once and created if missing.
    func destinationRoot(of job: Job) throws(SystemError) -> DirectoryHandle {
        if let kept = job.destination { return kept }
        let path = destinationPath(of: job)
        if let lastRoot, lastRoot.path == path { return lastRoot.root }
        let root: DirectoryHandle
        if let open = destinations[path] {
            root = open
        } else {
            root = try DirectoryHandle.openRoot(path, create: true)
            destinations[path] = root
        }
        lastRoot = (path, root)
        return root
    }

    /// The root `job` kept, opened (open(2)) by its class's path in the config now in force when
    /// the admin moved the folder there: stat(2) finds the same st_dev and st_ino, through no
    /// symlink `run` refuses (FileSystem.isAdminsRoot). Nil when it was not moved so.
    func movedRoot(of job: Job) -> DirectoryHandle? {
        guard let kept = job.destination else { return nil }
        let path = classDestinationPath(of: job)
        guard path != kept.path, FileSystem.isAdminsRoot(path) else { return nil }
        if let open = destinations[path] { return open.device == kept.device && open.inode == kept.inode ? open : nil }
        var info = stat()
        guard stat(path, &info) == 0, UInt64(info.st_dev) == kept.device, UInt64(info.st_ino) == kept.inode,
              let root = try? DirectoryHandle.openRoot(path, create: false),
              root.device == kept.device, root.inode == kept.inode else { return nil }
        destinations[path] = root
        return root
    }

    /// The path of the job's destination root: the one it kept (`Job.destination`), else its class's.
    func destinationPath(of job: Job) -> String {
        job.destination?.path ?? classDestinationPath(of: job)
    }

    /// The destination the config in force names for the job's class (else the global one).
    private func classDestinationPath(of job: Job) -> String {
        config.jobClass(named: job.record.className)?.destination.map(Agent.absolute) ?? context.destinationRoot
    }

    /// `x.iso`, `x.1.iso`, `x.2.iso`, …; the stem is cut so that a variant stays within
    /// `FileName.maxBytes` (NAME_MAX) when `name` is already that long.
    static func variants(of name: String) -> some Sequence<String> {
        // Split into stem and suffix only when a number is needed (rarely: a name taken).
        (0..<10_000).lazy.map { number in number == 0 ? name : variant(of: name, number: number) }
    }

    private static func variant(of name: String, number: Int) -> String {
        let dot = name.dropFirst().firstIndex(of: ".")
        var stem = dot.map { String(name[..<$0]) } ?? name
        var suffix = dot.map { String(name[$0...]) } ?? ""
        if suffix.utf8.count > FileName.maxBytes / 2 {
            stem = name
            suffix = ""
        }
        let marker = ".\(number)"
        let room = FileName.maxBytes - marker.utf8.count - suffix.utf8.count
        return FileName.prefix(stem, maxBytes: room) + marker + suffix
    }
}
