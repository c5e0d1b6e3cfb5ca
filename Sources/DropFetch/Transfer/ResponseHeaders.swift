import Glibc

/// The status and headers of one HTTP response, as the header callback sees them line by line.
struct ResponseHeaders: Sendable {
    private(set) var status = 0
    private var fields: [String: String] = [:]

    init() {}

    /// Starts a response from its status line (`HTTP/1.1 206 Partial Content`).
    init(statusLine: String) {
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        if parts.count >= 2 { status = Int(parts[1]) ?? 0 }
    }

    mutating func add(_ line: String) {
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        fields[name] = line[line.index(after: colon)...].trimmingWhitespace()
    }

    subscript(name: String) -> String? { fields[name] }

    /// False for interim (1xx) responses and redirects that libcurl will follow.
    func isFinal(following: Bool) -> Bool {
        if (100...199).contains(status) { return false }
        if following, [301, 302, 303, 307, 308].contains(status), fields["location"] != nil { return false }
        return true
    }

    /// The `Location` of a redirect (301, 302, 303, 307, 308), which the agent follows itself;
    /// nil for any other answer and for an empty `Location` (which libcurl ignores too).
    var redirectLocation: String? {
        guard [301, 302, 303, 307, 308].contains(status), let location = fields["location"], !location.isEmpty else { return nil }
        return location
    }

    /// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3), capped at a week: a
    /// server cannot park a job for longer, nor overflow the agent's timers.
    var retryAfter: Duration? {
        guard let value = fields["retry-after"] else { return nil }
        let seconds: Int64
        if value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), !value.isEmpty {
            seconds = Int64(value) ?? ResponseHeaders.maxRetryAfter
        } else if let when = ResponseHeaders.parseHTTPDate(value) {
            seconds = when - Int64(time(nil))
        } else {
            return nil
        }
        return .seconds(min(max(0, seconds), ResponseHeaders.maxRetryAfter))
    }

    static let maxRetryAfter: Int64 = 7 * 24 * 3600

    /// Seconds since the epoch for an IMF-fixdate such as `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110 §5.6.7).
    static func parseHTTPDate(_ value: String) -> Int64? {
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        let words = value.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        guard words.count == 6, words[5] == "GMT", let day = Int(words[1]),
              let month = months.firstIndex(of: words[2].lowercased()), let year = Int(words[3]) else { return nil }
        let parts = words[4].split(separator: ":", omittingEmptySubsequences: false)
        let clock = parts.compactMap { Int($0) }
        guard parts.count == 3, clock.count == 3, (1...31).contains(day), (1970...9999).contains(year),
              (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]) else { return nil }
        var calendar = tm()
        calendar.tm_year = Int32(year - 1900)
        calendar.tm_mon = Int32(month)
        calendar.tm_mday = Int32(day)
        calendar.tm_hour = Int32(clock[0])
        calendar.tm_min = Int32(clock[1])
        calendar.tm_sec = Int32(clock[2])
        return Int64(timegm(&calendar))
    }
}
