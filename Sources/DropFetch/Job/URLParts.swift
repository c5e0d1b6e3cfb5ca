import Glibc

/// The scheme and host of a URL string, enough for the protocol allow-list and per-host limits.
struct URLParts: Sendable, Equatable {
    var scheme: String
    var host: String
    /// True when the authority has a `user[:password]@` part.
    var hasUserInfo: Bool

    init?(_ url: String) {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              bytes[colon...].starts(with: "://".utf8) else { return nil }
        scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        let start = colon + 3
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.count
        var authority = bytes[start..<end]
        hasUserInfo = false
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            authority = authority[(at + 1)...]
            hasUserInfo = true
        }
        if authority.first == UInt8(ascii: "["), let close = authority.firstIndex(of: UInt8(ascii: "]")) {
            host = String(decoding: authority[...close], as: UTF8.self).lowercased()
        } else {
            host = String(decoding: authority.prefix { $0 != UInt8(ascii: ":") }, as: UTF8.self).lowercased()
        }
    }

    /// fnmatch(3) glob match, as used by class rules (`*.iso`, `*.example.org`).
    static func glob(_ pattern: String, matches text: String) -> Bool {
        fnmatch(pattern, text, 0) == 0
    }
}
