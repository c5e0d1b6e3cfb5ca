@testable import DropFetch
import Testing

/// The download lifecycle's transitions, `(phase, event) → (phase, effects)`, with no thread, curl
/// or disk: what a download's state and status entry become, and what the agent is asked to do.
@Suite("Download lifecycle")
struct DownloadLifecycleTests {
    private func policy(attempts: Int = 5) -> Config.Retry {
        var retry = Config.Retry()
        retry.attempts = attempts
        retry.initialDelay = .seconds(10)
        return retry
    }

    private func context(_ retry: Config.Retry, now: Int64 = 1_000, onceDeadline: Int64? = nil) -> DownloadLifecycle.RetryContext {
        DownloadLifecycle.RetryContext(policy: retry, jitter: 1, now: now, onceDeadline: onceDeadline)
    }

    private func failure(_ kind: ErrorKind, bytes: Int64 = 0) -> TransferFailure {
        TransferFailure(failure: Failure(kind, "test \(kind.rawValue)"), httpStatus: nil, retryAfter: nil, bytes: bytes, resumedFrom: 0)
    }

    /// A download whose name is taken and whose first transfer runs under key 7 from `offset`.
    private func running(mirrors: Int = 1, offset: Int64 = 0, now: Int64 = 1_000) -> DownloadLifecycle {
        var download = DownloadLifecycle(url: "http://a/f", mirrorCount: mirrors)
        download.handle(.reserving)
        download.handle(.reservationBack)
        download.handle(.nameTaken(size: offset, recordMirror: 0, finalPath: "/d/f"))
        download.handle(.attemptBegins(partSize: offset, recordMirror: 0))
        download.handle(.transferStarted(key: 7, url: "http://a/f", offset: offset, written: offset, now: now, newAttempt: true))
        return download
    }

    @Test("a moved destination renames the file of a download below it, and only below it; the phase and step stay")
    func destinationMoved() {
        var download = running()
        let step = download.step
        #expect(download.handle(.destinationMoved(from: "/d", to: "/srv/moved")).isEmpty)
        #expect(download.status.file == "/srv/moved/f" && download.phase == .running(key: 7) && download.step == step)
        // "/srv/mo" is a prefix of the string but not a folder of the path.
        download.handle(.destinationMoved(from: "/srv/mo", to: "/x"))
        #expect(download.status.file == "/srv/moved/f")
        download.handle(.destinationMoved(from: "/srv/moved", to: "/srv/é"))
        #expect(download.status.file == "/srv/é/f")
    }

    @Test("a proxied target's lookup: queued again when it is back; a late answer for a download that moved on changes nothing")
    func targetLookup() {
        var download = DownloadLifecycle(url: "http://a/f", mirrorCount: 1)
        download.handle(.nameTaken(size: 0, recordMirror: 0, finalPath: "/d/f"))
        download.handle(.attemptBegins(partSize: 0, recordMirror: 0))
        #expect(download.handle(.lookingUp).isEmpty)
        #expect(download.phase == .lookingUp && download.status.state == .queued)
        #expect(download.handle(.lookedUp).isEmpty)
        #expect(download.phase == .queued)
        download.handle(.transferStarted(key: 3, url: "http://a/f", offset: 0, written: 0, now: 10, newAttempt: true))
        #expect(download.handle(.lookedUp).isEmpty)
        #expect(download.phase == .running(key: 3) && download.attempt == 1)
    }

    @Test("a name or a connection the agent had no descriptor for waits until the given time, is shown queued and costs no attempt, whatever retry.attempts says")
    func descriptorShortageCostsNoAttempt() {
        var reserving = DownloadLifecycle(url: "http://a/f", mirrorCount: 1)
        reserving.handle(.reserving)
        reserving.handle(.reservationBack)
        #expect(reserving.handle(.descriptorsShort(until: 2_000)) == [.enqueue(due: 2_000)])
        #expect(reserving.phase == .waiting(until: 2_000, reason: .descriptors) && reserving.attempt == 0)

        // With one attempt allowed, a connection refused for want of a socket still leaves it to try.
        var download = running(now: 1_000)
        download.handle(.transferEnded(now: 1_000))
        #expect(download.handle(.descriptorsShort(until: 2_000)) == [.enqueue(due: 2_000)])
        #expect(download.phase == .waiting(until: 2_000, reason: .descriptors) && !download.isFinished)
        #expect(download.status.state == .queued, "a download waiting for a socket is not shown running")
        download.handle(.attemptBegins(partSize: 0, recordMirror: 0))
        download.handle(.transferStarted(key: 8, url: "http://a/f", offset: 0, written: 0, now: 2_000, newAttempt: false))
        #expect(download.attempt == 1)
        let effects = download.handle(.attemptFailed(failure(.network), context(policy(attempts: 1), now: 2_500)))
        #expect(effects.contains(.failDownload(Failure(.network, "test network"))), "\(effects)")
    }

    @Test("a download runs, publishes and is done: status done with file, bytes, sha256 and seconds; the job settles")
    func happyPath() {
        var download = running(now: 1_000)
        #expect(download.phase == .running(key: 7) && download.status.state == .running && download.attempt == 1)
        #expect(download.handle(.transferEnded(now: 3_500)).isEmpty)
        #expect(download.phase == .queued)
        download.handle(.publishing)
        #expect(download.phase == .publishing)
        let result = TransferResult(bytes: 42, sha256: "ab", httpStatus: 200, resumedFrom: 0)
        #expect(download.handle(.published(file: "/d/f", result: result)) == [.settle])
        #expect(download.phase == .finished && download.isFinished)
        #expect(download.status.state == .done && download.status.file == "/d/f" && download.status.bytes == 42)
        #expect(download.status.sha256 == "ab" && download.status.httpStatus == 200 && download.status.seconds == 2.5)
    }

    @Test("events that do not fit the phase change nothing: a late publication, a late reservation answer")
    func staleEvents() {
        var download = running()
        let before = download.status
        let result = TransferResult(bytes: 1, sha256: nil, httpStatus: 200, resumedFrom: 0)
        #expect(download.handle(.published(file: "/d/x", result: result)).isEmpty)
        #expect(download.handle(.reservationBack).isEmpty)
        #expect(download.phase == .running(key: 7) && download.status == before)
    }

    @Test("a failed mirror moves to the next; a failed round waits for a retry with backoff; retry_at follows")
    func mirrorsThenRetry() {
        var download = running(mirrors: 2)
        download.handle(.transferEnded(now: 2_000))
        #expect(download.handle(.attemptFailed(failure(.network), context(policy()))) == [.logAttempt(.nextMirror), .enqueue(due: nil)])
        #expect(download.mirror == 1 && download.phase == .queued && download.status.error?.kind == .network)
        download.handle(.transferStarted(key: 8, url: "http://b/f", offset: 0, written: 0, now: 2_000, newAttempt: false))
        download.handle(.transferEnded(now: 2_100))
        let effects = download.handle(.attemptFailed(failure(.timeout), context(policy(), now: 5_000)))
        #expect(effects == [.logAttempt(.retry(after: .seconds(10))), .retryAfter(milliseconds: 10_000),
                            .enqueue(due: 15_000), .countRetry, .saveState])
        #expect(download.phase == .waiting(until: 15_000, reason: .retry) && download.status.state == .waiting)
        #expect(download.beginsAttempt)
        // The next attempt starts at the mirror that wrote the data, or at mirror 0 with none.
        download.handle(.attemptBegins(partSize: 0, recordMirror: 1))
        #expect(download.attempt == 2 && download.mirror == 0)
    }

    @Test("the last attempt fails the download for good, keeping its error; the job settles")
    func attemptsUsedUp() {
        var download = running()
        download.handle(.transferEnded(now: 2_000))
        let effects = download.handle(.attemptFailed(failure(.network, bytes: 10), context(policy(attempts: 1))))
        #expect(effects == [.logAttempt(.fail), .failDownload(Failure(.network, "test network"))])
        #expect(download.handle(.failed(Failure(.network, "test network"), dataRemoved: false)) == [.settle])
        #expect(download.phase == .finished && download.status.state == .failed && download.status.bytes == 10)
    }

    @Test("an attempt that grew the .part by 1 MiB costs no attempt; one that did not, does")
    func progressCostsNoAttempt() {
        var grew = running(offset: 100)
        grew.handle(.transferEnded(now: 2_000))
        let credit = DownloadLifecycle.progressCredit
        #expect(grew.handle(.attemptFailed(failure(.network, bytes: 100 + credit), context(policy(attempts: 1))))
            .contains(.countRetry))
        var stalled = running(offset: 100)
        stalled.handle(.transferEnded(now: 2_000))
        #expect(stalled.handle(.attemptFailed(failure(.network, bytes: 99 + credit), context(policy(attempts: 1))))
            .contains(.logAttempt(.fail)))
    }

    @Test("a checksum mismatch that is retried refetches from zero (bytes 0)")
    func checksumRefetches() {
        var download = running()
        download.handle(.transferEnded(now: 2_000))
        let effects = download.handle(.attemptFailed(failure(.checksumMismatch, bytes: 500), context(policy())))
        #expect(effects.contains(.refetchFromZero) && effects.contains(.saveState))
        #expect(download.status.bytes == 0)
    }

    @Test("run --once: a wait for free space past once_wait is left for the next run, not queued")
    func noSpacePastOnceWait() {
        var download = running()
        download.handle(.transferEnded(now: 2_000))
        let effects = download.handle(.attemptFailed(failure(.noSpace), context(policy(), now: 5_000, onceDeadline: 6_000)))
        #expect(effects.contains(.leftForNextRun) && effects.contains(.saveState))
        #expect(!effects.contains { if case .enqueue = $0 { true } else { false } })
        #expect(download.phase == .waiting(until: 15_000, reason: .retry))
    }

    @Test("unusable partial data restarts three times, then ends the attempt as a network failure")
    func restartsAreBounded() {
        var download = running()
        for _ in 0..<3 {
            download.handle(.transferEnded(now: 2_000))
            #expect(download.handle(.partUnusable(reason: "changed")) == [.enqueue(due: nil)])
            download.handle(.transferStarted(key: 9, url: "http://a/f", offset: 0, written: 0, now: 2_000, newAttempt: false))
        }
        download.handle(.transferEnded(now: 2_000))
        let effects = download.handle(.partUnusable(reason: "changed"))
        guard case .failAttempt(let failed)? = effects.first else {
            Issue.record("expected the attempt to fail, got \(effects)")
            return
        }
        #expect(failed.failure.kind == .network && effects.count == 1)
    }

    @Test("a schedule hold waits once (saved once), ends back in the queue; a retry wait is not ended by it")
    func scheduleHolds() {
        var download = DownloadLifecycle(url: "http://a/f", mirrorCount: 1)
        #expect(download.handle(.heldBack(until: 9_000, reason: .schedule)) == [.saveState])
        #expect(download.handle(.heldBack(until: 9_500, reason: .schedule)).isEmpty)
        #expect(download.phase.heldReason == .schedule && download.status.state == .waiting)
        #expect(download.handle(.holdEnded) == [.saveState])
        #expect(download.phase == .queued && download.status.state == .queued)

        var retrying = running()
        retrying.handle(.transferEnded(now: 2_000))
        retrying.handle(.attemptFailed(failure(.network), context(policy())))
        #expect(retrying.handle(.holdEnded).isEmpty)
        #expect(retrying.phase == .waiting(until: 11_000, reason: .retry))
    }

    @Test("an attempt interrupted by a crash goes on at the mirror that wrote the data and costs no attempt")
    func interruptedAttemptResumes() {
        var download = DownloadLifecycle(url: "http://a/f", mirrorCount: 3)
        var saved = DownloadStatus(url: "http://a/f", file: nil, state: .running)
        saved.seconds = 4
        download.handle(.restored(saved: saved, attempts: 2))
        download.handle(.nameTaken(size: 4096, recordMirror: 2, finalPath: "/d/f"))
        #expect(download.handle(.attemptBegins(partSize: 4096, recordMirror: 2)).isEmpty)
        // `seconds` is this run's (issue 36: speeds count this run's bytes in this run's time).
        #expect(download.attempt == 2 && download.mirror == 2 && download.status.seconds == 0)

        var finished = DownloadLifecycle(url: "http://a/f", mirrorCount: 1)
        var done = DownloadStatus(url: "http://a/f", file: "/d/f", state: .done)
        done.bytes = 9
        finished.handle(.restored(saved: done, attempts: 1))
        #expect(finished.isFinished && finished.status == done)
        #expect(finished.handle(.waitsFromEarlierRun(until: 5)).isEmpty && finished.isFinished)
    }

    @Test("a split download stays one running download whose status counts its connections")
    func connections() {
        var download = running()
        #expect(download.status.connections == 1)
        #expect(download.handle(.connections(8)).isEmpty)
        #expect(download.status.connections == 8 && download.phase == .running(key: 7))
        download.handle(.connections(3))
        #expect(download.status.connections == 3)
        download.handle(.transferEnded(now: 2_000))
        download.handle(.connections(5))
        #expect(download.status.connections == 3, "not running: nothing to count")
    }

    @Test("a refused segment: queued again at once, and never split again in this run")
    func segmentsRefused() {
        var download = running()
        #expect(download.maySplit)
        download.handle(.transferEnded(now: 2_000))
        #expect(download.handle(.segmentsRefused(reason: "HTTP 200 to a segment's Range request")) == [.enqueue(due: nil)])
        #expect(!download.maySplit && download.phase == .queued && download.status.state == .queued)
        #expect(download.restarts == 1)
    }
}
