import CCurl

/// `Retry-After` (RFC 9110 §10.2.3) as libcurl parsed it, seconds or an HTTP-date
/// (CURLINFO_RETRY_AFTER), capped at a week: a server cannot park a job for longer, nor overflow
/// the agent's timers.
enum RetryAfter {
    static let maxSeconds: Int64 = 7 * 24 * 3600

    /// The delay the last response asked for; nil when it named none (or a moment already past).
    static func delay(from easy: CurlEasy) -> Duration? {
        capped(seconds: easy.info(offset: CURLINFO_RETRY_AFTER))
    }

    /// libcurl reports 0 for no header, a malformed one or "now".
    static func capped(seconds: Int64) -> Duration? {
        seconds > 0 ? .seconds(min(seconds, maxSeconds)) : nil
    }
}
