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

}
