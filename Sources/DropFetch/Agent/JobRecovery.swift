import Glibc

/// Adoption of this agent's own work folder and dead agents' (docs/spool.md), at start and on
/// every rescan: unfinished filings completed, interrupted moves finished, the rest admitted again.
final class JobRecovery: AgentPart {
    let context: AgentContext
    unowned var intake: JobIntake!
    private var sweptLeftovers = false
    /// Other agents' leases as this agent saw them (adoption waits for one to run out).
    private let leases: LeaseWatch
    /// When a work folder whose lock is free may be adopted (CLOCK_BOOTTIME ms), if one waits.
    private(set) var nextLook: Int64?
    /// Jobs were found while this agent's lease was lapsed: recovery runs again once it is back.
    private(set) var awaitsLease = false

    init(context: AgentContext) {
        self.context = context
        leases = LeaseWatch(ownLease: context.config.lease)
    }

    /// Whether a folder waits to be adopted and its time has come, or a recovery waits for the lease.
    func adoptionIsDue(now: Int64) -> Bool {
        awaitsLease || nextLook.map { $0 <= now } ?? false
    }

    /// Adopts this agent's work folder and any dead agent's (docs/spool.md), resuming each job from
    /// what is on disk; runs at start and on every rescan.
    func recover() {
        // Only at start: later, a temp here may be a status this run is filing (GroupCommit).
        if !sweptLeftovers {
            spool.removeLeftovers(in: spool.work)
            sweptLeftovers = true
        }
        // Nothing is adopted or admitted while the lease is lapsed (WorkLease.readyToAct asks for it).
        let mayAct = { [context] in context.lease?.readyToAct() ?? true }
        let adoption = spool.adoptOrphans(watch: leases, now: Fence.now() / 1_000_000, mayAct: mayAct)
        nextLook = adoption.nextLook
        awaitsLease = adoption.awaitsLease
        for job in adoption.completed { logger.info("completed the filing of \(job) begun by an agent that stopped") }
        for workName in adoption.adopted {
            let distrusted = adoption.distrusted.contains(workName)
            logger.info("adopted a job of agent \(adoption.owners[workName] ?? "?"), which can no longer act on it", metadata: [
                "job": "\(workName)",
                "partial_data": "\(distrusted ? "not trusted: the download starts again" : "resumed (its agent is gone)")",
            ])
        }
        let found = Set(spool.ownJobs() + adoption.adopted).sorted().filter { table.job(workName: $0) == nil }
        if !found.isEmpty, !mayAct() {
            awaitsLease = true
            return
        }
        for workName in found {
            crashPlan?.reach(.recovery)
            let previous = spool.readState(for: workName)
            let jobName = previous?.job ?? workName
            if spool.completeInterruptedMove(of: workName, folder: previous?.folder ?? "", job: jobName) {
                logger.info("completed an interrupted move of \(jobName)")
                if !FileSystem.exists(FileSystem.join(spool.work, workName)) { continue }
            }
            if let unfinished = spool.unfinishedFiling(of: workName, job: jobName) {
                do {
                    let claim = (try? FileSystem.lstatus(FileSystem.join(spool.work, workName))).map { UInt64($0.st_ino) } ?? 0
                    try spool.completeFiling(workName, to: unfinished.jobPath)
                    spool.removeResumeRecords(filedAt: unfinished.jobPath, owner: PartOwner(job: jobName, claim: claim))
                    logger.info("completed the filing of \(jobName) begun by an earlier run")
                } catch {
                    logger.error("cannot complete the filing of \(workName): \(error)")
                }
                continue
            }
            logger.info("resuming a job of an earlier run", metadata: ["job": "\(jobName)"])
            let arrival = (try? FileSystem.lstatus(FileSystem.join(spool.work, workName))).map {
                Int64($0.st_mtim.tv_sec) * 1_000_000_000 + Int64($0.st_mtim.tv_nsec)
            } ?? 0
            intake.admit(workName: workName, jobName: jobName, folder: previous?.folder ?? "", previous: previous,
                         arrival: previous.flatMap { Timestamp.parse($0.submitted) }.map { $0 * 1_000_000_000 } ?? arrival,
                         recovered: true, distrustsData: adoption.distrusted.contains(workName))
        }
    }
}
