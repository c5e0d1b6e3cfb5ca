/// A claimed job as the event loop holds it: who it is, what it asked for, its rules and state
/// (`JobMachine`, the only place they change) and the files its downloads own. Its state changes
/// only through `apply(_:to:)` and `handle(_:)`, which read the time from the agent's clock and
/// hand it to the machine with the event; only the event loop calls them.
final class Job {
    typealias Phase = DownloadLifecycle.Phase
    typealias WaitReason = DownloadLifecycle.WaitReason

    /// One download as the loop sees it: what was asked, where it stands (from the machine),
    /// and the files it owns.
    struct Download {
        let spec: DownloadSpec
        let lifecycle: DownloadLifecycle
        /// The `.part` this download owns from the moment its name is chosen until it is published.
        let part: PartFile?
        /// The name the download chose before its next reservation (a part set aside while it
        /// waits for a descriptor, or the file an earlier run recorded), still its own on disk.
        let earlier: PartReservation.EarlierName?
        /// The published part whose resume record still proves the file is this job's; removed once
        /// the job's status file names the file.
        let publishedRecord: PublishedRecord?

        var phase: Phase { lifecycle.phase }
        var status: DownloadStatus { lifecycle.status }
        var mirror: Int { lifecycle.mirror }
        var attempt: Int { lifecycle.attempt }
        var isFinished: Bool { lifecycle.isFinished }
        var currentURL: String { spec.urls[min(lifecycle.mirror, spec.urls.count - 1)] }
    }

    /// Which answer of a worker is still wanted: the one for download `download` of job `job`
    /// asked while the download had made `step` transitions. One check (`JobTable.current`)
    /// replaces the guards each completion made of the job, its phase and its part.
    struct Token: Equatable {
        let job: Int
        let download: Int
        let step: Int
    }

    /// A published file's folder, its record's name and the record (nil when none was written).
    typealias PublishedRecord = (folder: DirectoryHandle, name: String, record: ResumeRecord?)

    let id: Int
    /// The file name in `work/<agent>/`.
    let workName: String
    /// Who owns this job's `.part` names: its name and the inode of its job file.
    let owner: PartOwner
    let spec: JobSpec
    /// Queue order among equal priorities (nanoseconds of arrival).
    let arrival: Int64
    /// Adopted from an agent that may still be running elsewhere: its partial data is not resumed.
    let distrustsData: Bool
    private(set) var machine: JobMachine
    private let clock: AgentClock
    private var parts: [PartFile?]
    /// By download: rare (a descriptor shortage, a job held or stopped mid-download), so no
    /// storage until there is one.
    private var earlierNames: [Int: PartReservation.EarlierName] = [:]
    private var publishedRecords: [PublishedRecord?]
    /// The destination root of its first reservation, kept through config reloads (docs/config.md, Reloading).
    private(set) var destination: DirectoryHandle?
    /// Whether a reload named `destination` by another path (`relabelDestination`).
    private var relabelled = false
    /// The path `destination` had when it was kept: an absolute `dir=` is resolved against it,
    /// since the job was admitted under that path, whatever a relabel names the folder now.
    private(set) var keptPath: String?

    init(id: Int, workName: String, owner: PartOwner, spec: JobSpec, record: StatusRecord, arrival: Int64,
         stateFileMayExist: Bool = true, distrustsData: Bool = false, clock: AgentClock) {
        self.id = id
        self.distrustsData = distrustsData
        self.workName = workName
        self.owner = owner
        self.spec = spec
        self.arrival = arrival
        self.clock = clock
        machine = JobMachine(record: record, downloads: spec.downloads.map {
            DownloadLifecycle(url: Redaction.url($0.urls[0]), mirrorCount: $0.urls.count)
        }, stateFileMayExist: stateFileMayExist)
        parts = Array(repeating: nil, count: spec.downloads.count)
        publishedRecords = Array(repeating: nil, count: spec.downloads.count)
    }

    var record: StatusRecord { machine.record }
    var stateFileMayExist: Bool { machine.stateFileMayExist }
    var isFinished: Bool { machine.isFinished }
    var isRunning: Bool { machine.isRunning }

    var downloads: [Download] {
        spec.downloads.indices.map(download)
    }

    /// The keys of every URL of every download (`URLKey`), for duplicates; worked out once.
    private(set) lazy var urlKeys: Set<String> = Set(spec.downloads.flatMap { $0.urls.map(URLKey.key) })

    /// Whether a transfer of it runs or is about to (a name being taken, a target looked up), or
    /// its data is being published or filed: another job of one of its URLs waits for it.
    var isFetching: Bool {
        if machine.phase != .active { return true }
        return machine.downloads.contains { download in
            switch download.phase {
            case .running, .reserving, .lookingUp, .publishing: return true
            case .queued, .waiting, .finished: return false
            }
        }
    }

    /// The download indices (no `Download` made for them).
    var indices: Range<Int> { spec.downloads.indices }

    /// The records of the files published so far (`notePublished`), in download order.
    var publishedFiles: [PublishedRecord] { publishedRecords.compactMap { $0 } }

    func download(_ index: Int) -> Download {
        Download(spec: spec.downloads[index], lifecycle: machine.downloads[index], part: parts[index],
                 earlier: earlierNames.isEmpty ? nil : earlierNames[index], publishedRecord: publishedRecords[index])
    }

    /// The `.part` download `index` owns, if any.
    func part(of index: Int) -> PartFile? { parts[index] }

    /// The parts the job's other downloads set aside: names download `index` must not take,
    /// though their owner (the job) is its own.
    func setAsideParts(besides index: Int) -> [SetAsidePart] {
        guard !earlierNames.isEmpty else { return [] }
        return earlierNames.compactMap { other, name in
            guard other != index, case .setAside(let part) = name else { return nil }
            return part
        }
    }

    /// Writes the records its parts could not write when a descriptor or the disk was short: the
    /// open ones' (PartFile.saveRecord) and the set-aside ones' (SetAsidePart.writeOwedRecord),
    /// but none of a download whose reservation is on a worker (it has reopened its part).
    func writeOwedRecords() {
        for (index, part) in parts.enumerated() {
            part?.saveOwedRecord()
            guard !earlierNames.isEmpty, machine.downloads[index].phase != .reserving,
                  case .setAside(let aside)? = earlierNames[index] else { continue }
            aside.writeOwedRecord()
        }
    }

    /// The name download `index` took before its next reservation, if any (`Download.earlier`).
    func earlierName(of index: Int) -> PartReservation.EarlierName? {
        earlierNames.isEmpty ? nil : earlierNames[index]
    }

    func phase(of index: Int) -> Phase { machine.downloads[index].phase }

    func isFinished(_ index: Int) -> Bool { machine.downloads[index].isFinished }

    /// Applies `event` to download `index` at the clock's time; returns what the agent must do next.
    @discardableResult
    func apply(_ event: DownloadLifecycle.Event, to index: Int) -> [DownloadLifecycle.Effect] {
        machine.handle(.download(index, event), wall: clock.wallSeconds())
    }

    /// Applies a job-level `event` at the clock's time.
    @discardableResult
    func handle(_ event: JobMachine.Event) -> [DownloadLifecycle.Effect] {
        machine.handle(event, wall: clock.wallSeconds())
    }

    /// The token an answer for download `index`, asked for now, must carry to be taken.
    func token(_ index: Int) -> Token {
        Token(job: id, download: index, step: machine.step(of: index))
    }

    /// Keeps `root` as its destination unless it has one (`destination`).
    func keepDestination(_ root: DirectoryHandle) {
        guard destination == nil else { return }
        destination = root
        keptPath = root.path
    }

    /// Its kept destination was moved and the config names the new place, which `root` (the same
    /// folder: st_dev, st_ino) was opened by: its parts, and the paths it reports, go by that name.
    func relabelDestination(_ root: DirectoryHandle) {
        guard let old = destination?.path else { return }
        destination = root
        relabelled = true
        for case let part? in parts {
            if let same = renamed(part.folder) { part.relabel(same) }
        }
        for (index, earlier) in earlierNames {
            guard case .setAside(var part) = earlier else { continue }
            part.relabel(from: old, to: root.path)
            earlierNames[index] = .setAside(part)
        }
        for index in machine.downloads.indices { apply(.destinationMoved(from: old, to: root.path), to: index) }
    }

    /// `folder`, walked from the kept root (its `components`), named under the root's path now: the
    /// root itself, or a twin descriptor of a subfolder (DirectoryHandle.relabeled); nil when its
    /// name is right already, or no descriptor is free.
    private func renamed(_ folder: DirectoryHandle) -> DirectoryHandle? {
        guard let root = destination else { return nil }
        if folder.components.isEmpty {
            return folder !== root && folder.device == root.device && folder.inode == root.inode ? root : nil
        }
        let path = folder.components.reduce(root.path) { FileSystem.join($0, $1) }
        return path == folder.path ? nil : try? folder.relabeled(path)
    }

    /// A job that has taken no name follows its class's destination again (a reload reclassified it).
    func forgetDestination() {
        destination = nil
        keptPath = nil
        relabelled = false
    }

    /// Download `index` owns `part` from now until it is published or given up.
    func take(_ part: PartFile, for index: Int) {
        // Reserved under the root's old name by a request sent before the reload relabelled it.
        if relabelled, let same = renamed(part.folder) { part.relabel(same) }
        parts[index] = part
        if !earlierNames.isEmpty { earlierNames[index] = nil }
        apply(.nameTaken(size: part.size, recordMirror: part.record.mirror, finalPath: part.finalPath), to: index)
    }

    /// Download `index` no longer owns a `.part` (published, kept as a bad copy, or given up).
    func releasePart(of index: Int) {
        parts[index] = nil
    }

    /// Download `index` closes its `.part` and keeps the name on disk (SetAsidePart): it waits for
    /// a descriptor or its retry, and its next reservation reopens the part.
    func setAside(_ part: PartFile, for index: Int) {
        part.retire()
        parts[index] = nil
        earlierNames[index] = .setAside(SetAsidePart(part))
    }

    /// Download `index` of a job stopped, interrupted or held in an earlier run had taken the
    /// file name `name`: its next reservation tries that name first if its `.part` is this job's.
    func noteEarlierName(_ name: String, for index: Int) {
        earlierNames[index] = .recorded(name: name)
    }

    /// Download `index` gives up its earlier name, if any: it ended (a part set aside is then
    /// removed), or its reservation answered and dealt with the part on its worker.
    func dropEarlierName(of index: Int, removing: Bool) {
        if removing, case .setAside(let part)? = earlierNames[index] { part.remove() }
        earlierNames[index] = nil
    }

    /// The published file's record stays until the job's status file names the file.
    func notePublished(_ record: PublishedRecord?, for index: Int) {
        publishedRecords[index] = record
    }

    func snapshot() -> StatusRecord { machine.snapshot() }

    /// The record to file once every download is over, finished now.
    func finalRecord() -> StatusRecord { machine.finalRecord(wall: clock.wallSeconds()) }

    /// The record to file once download `index`, the last one still open, is published as `file`.
    func finalRecord(completing index: Int, file: String, result: TransferResult) -> StatusRecord {
        machine.finalRecord(completing: index, file: file, result: result, wall: clock.wallSeconds())
    }

    /// The record of a job that never queued (invalid, unsupported): failed at `wall`, every download with it.
    static func refusedRecord(_ base: StatusRecord, _ failure: Failure, wall: Int64) -> StatusRecord {
        var refused = base
        refused.state = .failed
        refused.error = failure
        refused.finished = Timestamp.format(seconds: wall)
        refused.folder = nil
        for index in refused.downloads.indices {
            refused.downloads[index].state = .failed
            refused.downloads[index].error = failure
        }
        return refused
    }
}

extension Job {
    /// The scheduler's entry for one of this job's downloads.
    func schedulerEntry(_ index: Int) -> Scheduler.Entry {
        Scheduler.Entry(unit: Scheduler.Unit(job: id, download: index), priority: record.priority,
                        arrival: Int(arrival), host: spec.downloads[index].host(mirror: machine.downloads[index].mirror),
                        className: record.className)
    }
}
