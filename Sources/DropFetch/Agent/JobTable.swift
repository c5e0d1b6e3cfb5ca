/// Every job this agent owns and every transfer it runs: the one place that answers "is this job
/// running", "which transfer is this", "what is left". Only the event loop uses it.
final class JobTable {
    private var jobs = IDTable<Job>()
    /// Ids of the jobs whose filing failed and is due again: the loop looks at these every turn, not at every job.
    private var failedFilings: Set<Int> = []
    private var idsByWorkName: [String: Int] = [:]
    /// Running downloads by the easy-handle key of their (first) transfer: one entry per download.
    private var transfers = IDTable<(transfer: Transfer, unit: Scheduler.Unit)>()
    /// Downloads split over several connections (issue 26), by their first transfer's key.
    private var groups: [Int: SegmentedDownload] = [:]
    /// The extra connections of split downloads: easy-handle key → the download's key.
    private var segmentOwners: [Int: Int] = [:]

    private var nextID = 0

    /// A new id for a job or an unclaimed inbox job (the scheduler's units share one space).
    func makeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    var isEmpty: Bool { jobs.isEmpty }
    var count: Int { jobs.count }
    /// Running downloads (a split one counts once).
    var runningCount: Int { transfers.count }
    /// Open connections: a split download's live segments, one for every other running download.
    var connectionCount: Int {
        transfers.count - groups.count + groups.values.reduce(0) { $0 + $1.liveConnections }
    }
    var allJobs: some Sequence<Job> { jobs.values }
    var allTransfers: some Sequence<(transfer: Transfer, unit: Scheduler.Unit)> { transfers.values }

    func job(_ id: Int) -> Job? { jobs[id] }

    func job(workName: String) -> Job? { idsByWorkName[workName].flatMap { jobs[$0] } }

    /// The job an answer carrying `token` is for, while the answer is still wanted: the job is
    /// still this agent's and its download has not moved on since the answer was asked for.
    func current(_ token: Job.Token) -> Job? {
        guard let job = jobs[token.job], job.machine.step(of: token.download) == token.step else { return nil }
        return job
    }

    func add(_ job: Job) {
        jobs[job.id] = job
        if !failedFilings.isEmpty { failedFilings.remove(job.id) }
        idsByWorkName[job.workName] = job.id
    }

    /// Forgets a job that was filed or left the work folder; its transfers must be ended first.
    func remove(_ job: Job) {
        jobs[job.id] = nil
        if !failedFilings.isEmpty { failedFilings.remove(job.id) }
        // A job filed moments ago may share its work name with one claimed since.
        if let index = idsByWorkName.index(forKey: job.workName), idsByWorkName.values[index] == job.id {
            idsByWorkName.remove(at: index)
        }
    }

    /// Forgets every job and transfer (a fenced agent drops what it had); returns the
    /// transfers, every connection of a split download included, for their handles' removal.
    func removeAll() -> [Transfer] {
        let running = transfers.values.map(\.transfer) + groups.values.flatMap(\.transfers)
        jobs.removeAll()
        failedFilings = []
        idsByWorkName = [:]
        transfers.removeAll()
        groups = [:]
        segmentOwners = [:]
        return running
    }

    // MARK: - Transfers

    /// A transfer runs for `unit`; its download's phase follows from the job's `apply` (transferStarted, redirected).
    func started(_ transfer: Transfer, for unit: Scheduler.Unit) {
        transfers[transfer.easy.key] = (transfer, unit)
    }

    /// The running transfer under `key`: a download's first transfer or a segment's.
    func transfer(key: Int) -> Transfer? {
        if !segmentOwners.isEmpty, let segment = segmentOwners[key].flatMap({ groups[$0]?.running[key]?.transfer }) { return segment }
        return transfers[key]?.transfer
    }

    /// The download under `key` (its first transfer's), forgotten with its segments; its
    /// download's phase is for the caller to set.
    func ended(key: Int) -> (transfer: Transfer, unit: Scheduler.Unit)? {
        if !groups.isEmpty, groups.removeValue(forKey: key) != nil { segmentOwners = segmentOwners.filter { $0.value != key } }
        return transfers.removeValue(forID: key)
    }

    /// The running download under `key` (its first transfer's).
    func transfers(ofKey key: Int) -> (transfer: Transfer, unit: Scheduler.Unit)? { transfers[key] }

    /// The running downloads of `job` (one entry each, split or not).
    func transfers(of job: Job) -> [(transfer: Transfer, unit: Scheduler.Unit)] {
        job.indices.compactMap { index in
            if case .running(let key) = job.phase(of: index) { return transfers[key] }
            return nil
        }
    }

    // MARK: - Segments

    /// The download under `key` is split: `group` owns its connections from now on.
    func split(key: Int, into group: SegmentedDownload) {
        groups[key] = group
    }

    /// The split download under `key`, if it is one.
    func group(key: Int) -> SegmentedDownload? { groups.isEmpty ? nil : groups[key] }

    /// An extra connection `segment` of the split download under `key` was opened.
    func segmentStarted(_ segment: Int, of key: Int) {
        segmentOwners[segment] = key
    }

    /// The key of the download whose connection `key` is: itself for a first transfer.
    func download(ofConnection key: Int) -> Int? {
        if !segmentOwners.isEmpty, let owner = segmentOwners[key] { return owner }
        return transfers[key] != nil ? key : nil
    }

    /// Connection `key` of a split download ended (the download goes on until `ended`).
    func segmentEnded(_ key: Int) {
        segmentOwners[key] = nil
    }

    /// Every open connection of the running download under `key`.
    func connections(ofDownload key: Int) -> [Transfer] {
        if !groups.isEmpty, let group = groups[key] { return group.transfers }
        return transfers[key].map { [$0.transfer] } ?? []
    }

    // MARK: - Filing

    /// Marks a job whose filing has begun: its own moves out of the work folder are not departures.
    func committing(_ job: Job) {
        job.handle(.commitBegins)
        if !failedFilings.isEmpty { failedFilings.remove(job.id) }
    }

    /// A job whose filing did not begin after all (its last download was not published): active again.
    func stoppedCommitting(_ job: Job) {
        job.handle(.commitAbandoned)
    }

    func isCommitting(_ job: Job) -> Bool { job.machine.isCommitting }

    /// A job whose filing failed waits here, with the record to file, for `retryAt`.
    func filingFailed(_ job: Job, record: StatusRecord, retryAt: Int64, counted: Bool = true) {
        job.handle(.filingFailed(record, due: retryAt, counted: counted))
        failedFilings.insert(job.id)
    }

    func filingFailures(of job: Job) -> Int { job.machine.filingFailures }

    /// Jobs whose filing is due again at `now`, with their records.
    func filingDue(now: Int64) -> [(job: Job, record: StatusRecord)] {
        failedFilings.compactMap { id in
            guard let job = jobs[id], case .filingDue(let due, _) = job.machine.phase, due <= now,
                  let record = job.machine.pendingFiling else { return nil }
            return (job, record)
        }
    }

    var nextFilingDue: Int64? {
        failedFilings.compactMap { id in
            guard case .filingDue(let due, _)? = jobs[id]?.machine.phase else { return nil }
            return due
        }.min()
    }

    var hasFilingFailures: Bool { nextFilingDue != nil }
}
