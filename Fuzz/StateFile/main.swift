// libFuzzer target for the state files an inbox writer can plant (`inbox/.x.state.json`, docs/spool.md
// "Released state"): StatusRecord decoding and ReleasedState's checks; compiled with Sources/DropFetch by Fuzz/run.sh.
import Glibc

/// Stops the run with `message`: libFuzzer records the input as a crash.
func violated(_ message: String) -> Never {
    fatalError("invariant violated: \(message)")
}

/// A fixed "now" (2026-01-01), so that a crash reproduces.
let now: Int64 = 1_767_225_600

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let record = StatusRecord.decode(bytes) {
        // What the agent writes it can read back unchanged.
        if StatusRecord.decode(record.encoded()) == nil { violated("re-encoded record does not decode: \(record)") }
    }
    guard let hints = ReleasedState.parse(bytes, now: now) else { return 0 }
    if !(0...ReleasedState.maxAttempts).contains(hints.attempts) { violated("attempts \(hints.attempts) out of range") }
    if let submitted = hints.submitted, submitted > now || submitted <= 0 { violated("arrival \(submitted) not in the past") }
    if let started = hints.started, started > now || started <= 0 { violated("start \(started) not in the past") }
    if let retryAt = hints.retryAt, retryAt < 0 || retryAt > now + ReleasedState.maxRetryDelay {
        violated("next try \(retryAt) beyond the cap")
    }
    if hints.waiting.count > ReleasedState.maxDownloads { violated("\(hints.waiting.count) download entries") }
    // The arrival in nanoseconds (JobIntake.index) must not overflow.
    if let submitted = hints.submitted, submitted.multipliedReportingOverflow(by: 1_000_000_000).overflow {
        violated("arrival \(submitted) overflows in nanoseconds")
    }
    let record = hints.record(job: "x.url", agent: "fuzz")
    if record.job != "x.url" { violated("the job's name came from the file: \(record.job)") }
    if record.downloads.contains(where: { $0.state == .done || $0.file != nil }) {
        violated("a result came from the file: \(record.downloads)")
    }
    // A missing arrival is written as the real time (after the fixed `now`): compared without it.
    if var again = ReleasedState.parse(record.encoded(), now: now) {
        if hints.submitted == nil { again.submitted = nil }
        if again != hints { violated("the hints do not survive a round trip: \(hints) came back as \(again)") }
    } else {
        violated("the agent's own record of the hints does not parse: \(hints)")
    }
    return 0
}
