import Glibc

/// The scheme and host of a URL string, enough for the protocol allow-list and per-host limits.
struct URLParts: Sendable, Equatable {
    var scheme: String
    var host: String

    init?(_ url: String) {
        guard let separator = url.range(of: "://") else { return nil }
        scheme = url[..<separator.lowerBound].lowercased()
        var authority = url[separator.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[...close]).lowercased()
        } else {
            host = String(authority.prefix { $0 != ":" }).lowercased()
        }
        guard !scheme.isEmpty else { return nil }
    }

    /// fnmatch(3) glob match, as used by class rules (`*.iso`, `*.example.org`).
    static func glob(_ pattern: String, matches text: String) -> Bool {
        fnmatch(pattern, text, 0) == 0
    }
}
