@testable import DropFetch
import Testing

/// The job machine's transitions, `(state, event) → (state, effects)`, phase by event, with no
/// thread, curl, disk or clock: the wall time each event happens at is given, so the record's
/// times are exact.
@Suite("Job machine")
struct JobMachineTests {
    /// 2026-11-28T10:00:00Z.
    private let wall: Int64 = 1_795_860_000

    private func machine(downloads: Int = 2) -> JobMachine {
        var record = StatusRecord(job: "j.url", state: .queued, className: "default", priority: 0, agent: "a1",
                                  submitted: Timestamp.format(seconds: wall))
        record.folder = "routed"
        return JobMachine(record: record, downloads: (0..<downloads).map {
            DownloadLifecycle(url: "http://a/\($0)", mirrorCount: 1)
        }, stateFileMayExist: false)
    }

    private func retryContext(now: Int64) -> DownloadLifecycle.RetryContext {
        var retry = Config.Retry()
        retry.attempts = 5
        retry.initialDelay = .seconds(10)
        return DownloadLifecycle.RetryContext(policy: retry, jitter: 1, now: now, onceDeadline: nil)
    }

    private func started(_ job: inout JobMachine, _ index: Int, at wall: Int64) {
        job.handle(.download(index, .attemptBegins(partSize: 0, recordMirror: 0)), wall: wall)
        job.handle(.download(index, .transferStarted(key: 10 + index, url: "http://a/\(index)", offset: 0, written: 0,
                                                     now: 1_000, newAttempt: true)), wall: wall)
    }

    @Test("started is the first transfer's wall time, retry_at the failure's plus its delay, finished the end's")
    func recordTimesFromEvents() {
        var job = machine()
        started(&job, 0, at: wall)
        #expect(job.record.started == "2026-11-28T10:00:00Z")
        #expect(job.snapshot().state == .running)
        job.handle(.download(0, .transferEnded(now: 1_500)), wall: wall + 1)
        let effects = job.handle(.download(0, .attemptFailed(
            TransferFailure(failure: Failure(.network, "reset"), httpStatus: nil, retryAfter: nil, bytes: 0, resumedFrom: 0),
            retryContext(now: 1_500))), wall: wall + 1)
        #expect(effects.contains(.saveState))
        guard case .retryAfter(let delay)? = effects.first(where: { if case .retryAfter = $0 { true } else { false } }) else {
            Issue.record("no retry: \(effects)")
            return
        }
        #expect(job.record.retryAt == Timestamp.format(seconds: wall + 1 + (delay + 999) / 1000))
        job.handle(.download(1, .waitsFromEarlierRun(until: 11_000)), wall: wall + 2)
        #expect(job.snapshot().state == .waiting)
        // A second transfer does not move `started`; it clears `retry_at`.
        started(&job, 1, at: wall + 30)
        #expect(job.record.started == "2026-11-28T10:00:00Z" && job.record.retryAt == nil)
        job.handle(.download(1, .transferEnded(now: 2_000)), wall: wall + 31)
        job.handle(.download(0, .failed(Failure(.httpStatus, "404"), dataRemoved: true)), wall: wall + 40)
        job.handle(.download(1, .foundFinished(file: "/d/1", bytes: 3, sha256: nil)), wall: wall + 41)
        let final = job.finalRecord(wall: wall + 60)
        #expect(final.state == .failed && final.error?.kind == .httpStatus && final.retryAt == nil && final.folder == nil)
        #expect(final.finished == "2026-11-28T10:01:00Z")
        #expect(final.downloads.map(\.state) == [.failed, .done])
    }

    @Test("commit phases: committing, a failed filing due again with its record and count (not counted when short of a descriptor), committing again, abandoned")
    func commitPhases() {
        var job = machine(downloads: 1)
        #expect(job.phase == .active && !job.isCommitting && job.filingFailures == 0)
        #expect(job.handle(.commitAbandoned, wall: wall).isEmpty && job.phase == .active)
        job.handle(.commitBegins, wall: wall)
        #expect(job.phase == .committing(failures: 0) && job.isCommitting)
        let final = job.finalRecord(wall: wall)
        job.handle(.filingFailed(final, due: 5_000), wall: wall)
        #expect(job.phase == .filingDue(at: 5_000, failures: 1) && !job.isCommitting)
        #expect(job.pendingFiling == final)
        job.handle(.commitBegins, wall: wall)
        #expect(job.phase == .committing(failures: 1) && job.pendingFiling == nil, "a retry keeps the count of failures")
        job.handle(.filingFailed(final, due: 9_000), wall: wall)
        #expect(job.phase == .filingDue(at: 9_000, failures: 2))
        job.handle(.commitBegins, wall: wall)
        job.handle(.filingFailed(final, due: 10_000, counted: false), wall: wall)
        #expect(job.phase == .filingDue(at: 10_000, failures: 2), "a filing short of a descriptor does not grow the backoff")
        job.handle(.commitBegins, wall: wall)
        job.handle(.commitAbandoned, wall: wall)
        #expect(job.phase == .active)
    }

    @Test("a schedule hold: waiting with retry_at, saved once per change; its end queues and saves once")
    func holds() {
        var job = machine(downloads: 1)
        let first = job.handle(.heldBack(0, until: 60_000, reason: .schedule, retryAt: "2026-11-28T11:00:00Z"), wall: wall)
        #expect(first == [.saveState])
        #expect(job.snapshot().state == .waiting && job.snapshot().waitReason == "schedule")
        #expect(job.record.retryAt == "2026-11-28T11:00:00Z")
        #expect(job.handle(.heldBack(0, until: 60_000, reason: .schedule, retryAt: "2026-11-28T11:00:00Z"), wall: wall).isEmpty)
        #expect(job.handle(.heldBack(0, until: 90_000, reason: .schedule, retryAt: "2026-11-28T11:30:00Z"), wall: wall) == [.saveState])
        #expect(job.handle(.holdsEnded, wall: wall) == [.saveState])
        #expect(job.record.retryAt == nil && job.snapshot().state == .queued)
        #expect(job.handle(.holdsEnded, wall: wall).isEmpty)
    }

    @Test("a download's step moves with its phase only: an answer asked for before a move is stale after it")
    func stepsMoveWithPhases() {
        var job = machine(downloads: 2)
        let queued = job.step(of: 0)
        job.handle(.download(0, .reserving), wall: wall)
        let reserving = job.step(of: 0)
        #expect(reserving != queued && job.step(of: 1) == 0)
        job.handle(.download(0, .progress(bytes: 5, size: 10)), wall: wall)
        job.handle(.reclassified(className: "bulk", priority: 3), wall: wall)
        #expect(job.step(of: 0) == reserving, "progress and a new class move no phase")
        job.handle(.download(0, .reservationBack), wall: wall)
        #expect(job.step(of: 0) != reserving)
        // A late answer for a phase left behind changes nothing.
        let back = job.step(of: 0)
        #expect(job.handle(.download(0, .reservationBack), wall: wall).isEmpty && job.step(of: 0) == back)
        #expect(job.record.className == "bulk" && job.record.priority == 3)
    }

    @Test("the record of a last download being published is worked out on a copy; the machine is unchanged")
    func prospectiveFinalRecord() {
        var job = machine(downloads: 1)
        started(&job, 0, at: wall)
        job.handle(.download(0, .transferEnded(now: 2_000)), wall: wall)
        job.handle(.download(0, .publishing), wall: wall)
        let result = TransferResult(bytes: 42, sha256: nil, httpStatus: 200, resumedFrom: 0)
        let final = job.finalRecord(completing: 0, file: "/d/f", result: result, wall: wall + 5)
        #expect(final.state == .done && final.downloads[0].file == "/d/f" && final.downloads[0].bytes == 42)
        #expect(final.finished == "2026-11-28T10:00:05Z")
        #expect(job.downloads[0].phase == .publishing && job.snapshot().state == .running)
        #expect(!job.stateFileMayExist)
        job.handle(.stateWritten, wall: wall)
        #expect(job.stateFileMayExist)
    }
}
