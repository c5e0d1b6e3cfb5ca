import Glibc

/// The scheme and host of a URL string, enough for the protocol allow-list and per-host limits,
/// as libcurl's own parser reads them (`CurlURL`, curl_url(3)): the host a limit counts is the host
/// the request goes to, whatever a hostile URL looks like. Nil when libcurl cannot parse it.
struct URLParts: Sendable, Equatable {
    var scheme: String
    var host: String
    /// True when the authority has a `user[:password]@` part.
    var hasUserInfo: Bool

    init?(_ url: String) {
        guard let parsed = try? CurlURL(url), let scheme = parsed.scheme else { return nil }
        self.scheme = scheme
        host = parsed.host ?? ""
        hasUserInfo = parsed.user != nil || parsed.password != nil
    }

    /// fnmatch(3) glob match, as used by class rules (`*.iso`, `*.example.org`).
    static func glob(_ pattern: String, matches text: String) -> Bool {
        fnmatch(pattern, text, 0) == 0
    }
}
