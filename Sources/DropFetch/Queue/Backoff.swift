/// Delays between attempts: exponential from `initial_delay`, capped at `max_delay`, with jitter,
/// never sooner than a server's `Retry-After`.
enum Backoff {
    /// - Parameters:
    ///   - attempt: the number of attempts made so far (1 after the first failure).
    ///   - jitter: a value in 0..<1; the delay is scaled into [50%, 100%] of the exponential step.
    static func delay(attempt: Int, policy: Config.Retry, retryAfter: Duration?, jitter: Double) -> Duration {
        let initial = Double(policy.initialDelay.milliseconds)
        let maximum = Double(policy.maxDelay.milliseconds)
        let exponent = min(max(attempt - 1, 0), 40)
        let step = min(maximum, initial * Double(1 << exponent))
        let jittered = step * (0.5 + 0.5 * min(max(jitter, 0), 1))
        var milliseconds = max(Int64(jittered.rounded()), 0)
        if let retryAfter {
            milliseconds = max(milliseconds, Int64(retryAfter.milliseconds))
        }
        return .milliseconds(milliseconds)
    }

    /// The delay before retrying a spool step that failed on the file system (a claim, a filing:
    /// EIO, ENOSPC) for the `failures`-th time: the same doubling from `initial`, at most a minute,
    /// without jitter (the step is this agent's own).
    static func spoolStep(failures: Int, initial: Duration) -> Duration {
        var policy = Config.Retry()
        policy.initialDelay = initial
        policy.maxDelay = .seconds(60)
        return delay(attempt: failures, policy: policy, retryAfter: nil, jitter: 1)
    }
}
