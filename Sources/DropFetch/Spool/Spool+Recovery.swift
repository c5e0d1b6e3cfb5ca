import Glibc

/// Recovery: where a job that left a work folder went, interrupted moves and filings completed,
/// dead agents' work folders adopted, stale temporaries removed (docs/spool.md).
extension Spool {
    /// Where a job that left a work folder is now, if anywhere in the spool.
    enum Place: String, Sendable { case inbox, hold, done, failed }

    func whereIs(job: String, workName: String, folder: String) -> Place? {
        let sub = folder.isEmpty ? "" : "/" + folder
        for name in Set([job, workName]) {
            if FileSystem.exists(hold + sub + "/" + name) || FileSystem.exists(FileSystem.join(hold, name)) { return .hold }
            if FileSystem.exists(inbox + sub + "/" + name) { return .inbox }
        }
        if FileSystem.exists(FileSystem.join(failed, workName)) || FileSystem.exists(FileSystem.join(failed, job)) { return .failed }
        if FileSystem.exists(FileSystem.join(done, workName)) || FileSystem.exists(FileSystem.join(done, job)) { return .done }
        return nil
    }

    /// A job file in this agent's work folder with a second link (st_nlink 2) is a move that
    /// link(2) + unlink(2) began and a crash interrupted: the claim (twin in the inbox) or the
    /// filing (twin in done/ or failed/) is completed. Returns whether one was found.
    func completeInterruptedMove(of workName: String, folder: String, job: String) -> Bool {
        let path = FileSystem.join(work, workName)
        guard let info = try? FileSystem.lstatus(path), info.st_nlink > 1 else { return false }
        func same(_ other: String) -> Bool {
            guard let twin = try? FileSystem.lstatus(other) else { return false }
            return twin.st_ino == info.st_ino && twin.st_dev == info.st_dev
        }
        let sub = folder.isEmpty ? "" : folder + "/"
        for name in Set([workName, job]) where same(inbox + "/" + sub + name) {
            try? FileSystem.unlink(inbox + "/" + sub + name)
            return true
        }
        for outcome in [done, failed] {
            for candidate in Spool.candidateNames(job).prefix(1000) where same(FileSystem.join(outcome, candidate)) {
                try? FileSystem.unlink(path)
                try? FileSystem.removeIfPresent(statePath(for: workName))
                return true
            }
        }
        return false
    }

    /// Removes dot-temp files (`.x.tmp`, `.x.status.json.123.tmp`) left in the spool folders by writers
    /// or by a crash, once they are older than `age` seconds at `now` (the agent clock's wall
    /// seconds). Returns how many were removed.
    @discardableResult
    func removeStaleTemporaries(olderThan age: Int64 = 86_400, now: Int64) -> Int {
        var removed = 0
        var folders = [inbox, hold, done, failed, work]
        var index = 0
        while index < folders.count {
            let folder = folders[index]
            index += 1
            let walksRouting = folder.hasPrefix(inbox)
            for entry in (try? FileSystem.entries(of: folder)) ?? [] {
                // A temp file's name is hidden; of the rest only the inbox's routing folders count.
                guard entry.name.hasPrefix(".") else {
                    // A job file (d_type says so) makes no path: the inbox holds thousands of them.
                    guard walksRouting, folders.count < 10_000, entry.isDirectory != false else { continue }
                    let path = FileSystem.join(folder, entry.name)
                    if entry.isDirectory ?? FileSystem.isDirectory(path) { folders.append(path) }
                    continue
                }
                let path = FileSystem.join(folder, entry.name)
                guard entry.name.hasSuffix(".tmp"),
                      let info = try? FileSystem.lstatus(path), (info.st_mode & S_IFMT) == S_IFREG,
                      now - Int64(info.st_mtim.tv_sec) > age else { continue }
                if (try? FileSystem.unlink(path)) != nil { removed += 1 }
            }
        }
        return removed
    }

    /// Removes what a dead run left in a work folder whose lock this agent holds: temp files of
    /// interrupted atomic writes, and state files of jobs that were filed before the crash.
    func removeLeftovers(in folder: String) {
        for entry in (try? FileSystem.entries(of: folder)) ?? [] {
            let name = entry.name
            let isTemp = name.hasPrefix(".") && name.hasSuffix(".tmp")
            let isOrphanState = name.hasSuffix(".state.json")
                && !FileSystem.exists(folder + "/" + String(name.dropLast(".state.json".count)) + ".url")
            if isTemp || isOrphanState { try? FileSystem.removeIfPresent(FileSystem.join(folder, name)) }
        }
    }

    /// Job files in this agent's work folder, left by an earlier run of it.
    func ownJobs() -> [String] {
        ((try? FileSystem.entries(of: work)) ?? []).map(\.name).filter(Spool.isJobName).sorted()
    }

    /// What `adoptOrphans` found in other agents' work folders.
    struct Adoption {
        /// The jobs moved into this agent's work folder.
        var adopted: [String] = []
        /// Whose each adopted job was (its work name here → the agent).
        var owners: [String: String] = [:]
        /// Of those, the ones whose owner may still be alive somewhere (cut off, fenced): their
        /// partial data is not resumed, since a write of the owner's may still land in it.
        var distrusted: Set<String> = []
        /// Jobs whose filing the owner had begun, completed here.
        var completed: [String] = []
        /// When a folder whose lock is free may be adopted (CLOCK_BOOTTIME ms): look again then.
        var nextLook: Int64?
        /// A folder with jobs was left unjudged: this agent's lease was lapsed (`mayAct`).
        var awaitsLease = false
    }

    /// Moves the jobs of agents that can no longer act on them into this agent's work folder: a
    /// folder whose `.lock` can be taken and whose lease `watch` judges run out (DESIGN.md §10
    /// Fencing). A job whose status file the owner had already written is filed beside it instead
    /// (only the owner's own records are recognised: see `unfinishedFiling`). `mayAct` is asked
    /// before a folder with jobs is judged: false leaves it for a later look (`awaitsLease`).
    func adoptOrphans(watch: LeaseWatch, now: Int64, mayAct: () -> Bool = { true }) -> Adoption {
        var result = Adoption()
        let agents = ((try? FileSystem.entries(of: workRoot)) ?? []).map(\.name)
        for other in agents where other != agentID && !other.hasPrefix(".") {
            let folder = FileSystem.join(workRoot, other)
            guard let lockFile = try? FileDescriptor.open(folder + "/.lock", flags: O_RDWR | O_NOFOLLOW) else { continue }
            guard (try? lockFile.tryLockExclusive()) == true else {
                watch.sawAlive(other)
                continue
            }
            let names = ((try? FileSystem.entries(of: folder)) ?? []).map(\.name)
            guard names.contains(where: Spool.isJobName) else { continue }
            // Judged only with the lease held: a verdict starts its wait again once given.
            guard mayAct() else {
                result.awaitsLease = true
                continue
            }
            let trustsData: Bool
            switch watch.verdict(on: other, folder: folder, now: now) {
            case .adopt(let trusted): trustsData = trusted
            case .wait(let until):
                result.nextLook = min(result.nextLook ?? until, until)
                continue
            }
            for name in names where Spool.isJobName(name) {
                let job = readState(for: name, in: folder)?.job ?? name
                let claim = (try? FileSystem.lstatus(FileSystem.join(folder, name))).map { UInt64($0.st_ino) } ?? 0
                if let unfinished = unfinishedFiling(of: name, job: job, by: other),
                   (try? completeFiling(name, to: unfinished.jobPath, from: folder)) != nil {
                    removeResumeRecords(filedAt: unfinished.jobPath, owner: PartOwner(job: job, claim: claim))
                    result.completed.append(job)
                    continue
                }
                for candidate in Spool.candidateNames(name) {
                    do {
                        // A move into this agent's own folder, as a claim is: never a second link
                        // that a crash would leave in the dead agent's folder, which no recovery
                        // looks for (`completeInterruptedMove` knows inbox, done and failed twins).
                        try FileSystem.moveIntoPrivateFolder(FileSystem.join(folder, name), to: FileSystem.join(work, candidate))
                        let state = folder + "/" + Spool.stateName(forJob: name)
                        try? FileSystem.rename(state, to: statePath(for: candidate))
                        result.adopted.append(candidate)
                        result.owners[candidate] = other
                        if !trustsData { result.distrusted.insert(candidate) }
                        break
                    } catch where error.code == EEXIST {
                        continue
                    } catch {
                        break
                    }
                }
            }
            removeLeftovers(in: folder)
        }
        return result
    }

    /// `adoptOrphans` of whatever can be adopted now, for tests and control commands.
    func adoptOrphans() -> [String] {
        adoptOrphans(watch: LeaseWatch(ownLease: .zero), now: Fence.now() / 1_000_000).adopted
    }

    /// A status file in done/ or failed/ that names this job but has no job file beside it: a run
    /// stopped between writing the status and moving the job. Returns where the job belongs.
    /// `agent` is the agent whose work folder holds the job (default: this one).
    ///
    /// The record must be no older than the job's claim (the work file's ctime, which rename(2)
    /// sets): a failed job moved back to the inbox by hand leaves its old record behind, and that
    /// record must not send the new attempt straight back to failed/.
    func unfinishedFiling(of workName: String, job: String, by agent: String? = nil) -> (outcome: Outcome, jobPath: String)? {
        let workFolder = agent.map { workRoot + "/" + $0 } ?? work
        guard let claimed = try? FileSystem.lstatus(FileSystem.join(workFolder, workName)) else { return nil }
        let claimTime = Int64(claimed.st_ctim.tv_sec)
        for outcome in [Outcome.done, .failed] {
            let folder = outcome == .done ? done : failed
            for candidate in Spool.candidateNames(job) {
                let statusPath = folder + "/" + Spool.statusName(forJob: candidate)
                guard FileSystem.exists(statusPath) else { break }
                if FileSystem.exists(FileSystem.join(folder, candidate)) { continue }
                guard let record = readRecord(at: statusPath), record.job == job, record.agent == (agent ?? agentID),
                      let finished = record.finished.flatMap(Timestamp.parse), finished >= claimTime else { continue }
                return (outcome, FileSystem.join(folder, candidate))
            }
        }
        return nil
    }

    /// Removes the resume records a job filed at `jobPath` left beside its files (PartFile.removeRecords).
    func removeResumeRecords(filedAt jobPath: String, owner: PartOwner) {
        let statusPath = FileSystem.directoryName(of: jobPath) + "/" + Spool.statusName(forJob: FileSystem.baseName(of: jobPath))
        if let filed = readRecord(at: statusPath) { PartFile.removeRecords(of: filed, owner: owner, key: recordKey) }
    }

    /// Completes a filing found by `unfinishedFiling(of:job:)`.
    func completeFiling(_ workName: String, to jobPath: String, from folder: String? = nil) throws(SystemError) {
        let folder = folder ?? work
        try FileSystem.renameNoReplace(FileSystem.join(folder, workName), to: jobPath)
        journal.append(name: FileSystem.baseName(of: jobPath), outcome: FileSystem.directoryName(of: jobPath) == done ? .done : .failed)
        try? FileSystem.removeIfPresent(folder + "/" + Spool.stateName(forJob: workName))
        if durable {
            try FileSystem.syncDirectory(FileSystem.directoryName(of: jobPath))
            try FileSystem.syncDirectory(folder)
        }
    }

    /// Replaces a running job's state file: progress for `status`, and the chosen file names, attempts
    /// and retry schedule for a restart.
    ///
}
