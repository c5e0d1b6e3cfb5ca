/// What follows a failed try of one mirror (docs/job-file.md, mirrors; docs/status.md, attempts):
/// the next mirror of the round, a retry of the download after a delay, or the end. Pure.
///
/// One attempt tries each mirror once, in order, starting at the mirror that wrote the partial
/// data; `retry.attempts` counts attempts that made no progress, the first included, and no
/// download gets more than `maxAttemptsInAll` attempts in all. A full disk is waited out however
/// many attempts that takes.
enum RetryPolicy {
    struct Outcome: Sendable, Equatable {
        var kind: ErrorKind
        var httpStatus: Int?
        var retryAfter: Duration?
        /// The URL must not be tried again (a refused address, a refused login); other mirrors may.
        var isFinal = false
    }

    struct Round: Sendable, Equatable {
        /// Mirrors tried in this attempt, the failed one included.
        var mirrorsTried: Int
        var mirrorCount: Int
        /// Attempts begun so far, this one included (1 after the first).
        var attempt: Int
        /// Whether an earlier mirror of this round failed in a way worth a retry.
        var earlierRetryable = false
        /// Attempts begun so far, free ones (that made progress) included.
        var attemptsInAll = 0
    }

    /// Attempts a download gets at most, however many made progress: a server that trickles a
    /// little per connection cannot keep a job retrying for ever.
    static let maxAttemptsInAll = 100

    enum Decision: Sendable, Equatable {
        case nextMirror
        case retry(after: Duration)
        case fail
    }

    static func decide(_ outcome: Outcome, _ round: Round, policy: Config.Retry, jitter: Double) -> Decision {
        switch outcome.kind {
        case .invalidJob, .exists, .cancelled, .internal:
            return .fail
        case .noSpace:
            return .retry(after: Backoff.delay(attempt: round.attempt, policy: policy, retryAfter: nil, jitter: jitter))
        default:
            break
        }
        if round.mirrorsTried < round.mirrorCount { return .nextMirror }
        guard isRetryable(outcome, policy: policy) || round.earlierRetryable, round.attempt < policy.attempts,
              round.attemptsInAll < maxAttemptsInAll else {
            return .fail
        }
        return .retry(after: Backoff.delay(attempt: round.attempt, policy: policy, retryAfter: outcome.retryAfter,
                                           jitter: jitter))
    }

    /// Whether trying the same URL again later can succeed.
    static func isRetryable(_ outcome: Outcome, policy: Config.Retry) -> Bool {
        if outcome.isFinal { return false }
        switch outcome.kind {
        case .network, .timeout, .checksumMismatch, .noSpace: return true
        case .httpStatus: return outcome.httpStatus.map(policy.onHTTP.contains) ?? false
        default: return false
        }
    }
}
