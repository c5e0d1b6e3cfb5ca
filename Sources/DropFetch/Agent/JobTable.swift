/// Every job this agent owns and every transfer it runs: the one place that answers "is this job
/// running", "which transfer is this", "what is left". Only the event loop uses it.
final class JobTable {
    /// What the table knows of one job besides the job itself.
    private enum State {
        case active
        /// Being filed: its status is written and waits, with the moves, for the group commit
        /// (after this many failed filings).
        case committing(failures: Int)
        /// Its downloads are over but filing it failed (ENOSPC, EIO): retried at this monotonic time.
        case filing(StatusRecord, retryAt: Int64, failures: Int)
    }

    private var jobs: [Int: (job: Job, state: State)] = [:]
    /// Ids of the jobs in `.filing`: the loop looks at these every turn, not at every job.
    private var failedFilings: Set<Int> = []
    private var idsByWorkName: [String: Int] = [:]
    /// Running transfers by easy-handle key.
    private var transfers: [Int: (transfer: Transfer, unit: Scheduler.Unit)] = [:]

    private var nextID = 0

    /// A new id for a job or an unclaimed inbox job (the scheduler's units share one space).
    func makeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    var isEmpty: Bool { jobs.isEmpty }
    var count: Int { jobs.count }
    var runningCount: Int { transfers.count }
    var allJobs: some Sequence<Job> { jobs.values.lazy.map(\.job) }
    var allTransfers: some Sequence<(transfer: Transfer, unit: Scheduler.Unit)> { transfers.values }

    func job(_ id: Int) -> Job? { jobs[id]?.job }

    func job(workName: String) -> Job? { idsByWorkName[workName].flatMap { jobs[$0]?.job } }

    func add(_ job: Job) {
        jobs[job.id] = (job, .active)
        failedFilings.remove(job.id)
        idsByWorkName[job.workName] = job.id
    }

    /// Forgets a job that was filed or left the work folder; its transfers must be ended first.
    func remove(_ job: Job) {
        jobs[job.id] = nil
        failedFilings.remove(job.id)
        // A job filed moments ago may share its work name with one claimed since.
        if idsByWorkName[job.workName] == job.id { idsByWorkName[job.workName] = nil }
    }

    // MARK: - Transfers

    /// A transfer runs for `unit`; its download's phase follows from the job's `apply` (transferStarted, redirected).
    func started(_ transfer: Transfer, for unit: Scheduler.Unit) {
        transfers[transfer.easy.key] = (transfer, unit)
    }

    /// The running transfer under `key`.
    func transfer(key: Int) -> Transfer? { transfers[key]?.transfer }

    /// The transfer under `key`, forgotten; its download's phase is for the caller to set.
    func ended(key: Int) -> (transfer: Transfer, unit: Scheduler.Unit)? {
        transfers.removeValue(forKey: key)
    }

    func transfers(of job: Job) -> [(transfer: Transfer, unit: Scheduler.Unit)] {
        job.downloads.compactMap { download in
            if case .running(let key) = download.phase { return transfers[key] }
            return nil
        }
    }

    // MARK: - Filing

    /// Marks a job whose filing has begun: its own moves out of the work folder are not departures.
    func committing(_ job: Job) {
        let failures = filingFailures(of: job)
        jobs[job.id]?.state = .committing(failures: failures)
        failedFilings.remove(job.id)
    }

    /// A job whose filing did not begin after all (its last download was not published): active again.
    func stoppedCommitting(_ job: Job) {
        guard case .committing? = jobs[job.id]?.state else { return }
        jobs[job.id]?.state = .active
    }

    func isCommitting(_ job: Job) -> Bool {
        if case .committing? = jobs[job.id]?.state { return true }
        return false
    }

    /// A job whose filing failed waits here, with the record to file, for `retryAt`.
    func filingFailed(_ job: Job, record: StatusRecord, retryAt: Int64) {
        jobs[job.id] = (job, .filing(record, retryAt: retryAt, failures: filingFailures(of: job) + 1))
        failedFilings.insert(job.id)
    }

    func filingFailures(of job: Job) -> Int {
        switch jobs[job.id]?.state {
        case .filing(_, _, let failures)?, .committing(let failures)?: return failures
        case .active?, nil: return 0
        }
    }

    /// Jobs whose filing is due again at `now`, with their records.
    func filingDue(now: Int64) -> [(job: Job, record: StatusRecord)] {
        failedFilings.compactMap { id in
            guard let entry = jobs[id], case .filing(let record, let due, _) = entry.state, due <= now else { return nil }
            return (entry.job, record)
        }
    }

    var nextFilingDue: Int64? {
        failedFilings.compactMap { id in
            guard case .filing(_, let due, _)? = jobs[id]?.state else { return nil }
            return due
        }.min()
    }

    var hasFilingFailures: Bool { nextFilingDue != nil }
}
