import CCurl

/// A URL parsed by libcurl's URL API (curl_url(3), CURLU), so that its parts are read exactly
/// as libcurl will fetch them: any scheme, IPv6 literals in brackets, relative redirects.
final class CurlURL {
    private let handle: OpaquePointer

    /// Parses an absolute URL; nil when libcurl refuses it (curl_url_set(3) with CURLUPART_URL).
    init?(_ url: String) {
        guard let handle = curl_url() else { return nil }
        self.handle = handle
        guard curl_url_set(handle, CURLUPART_URL, url, UInt32(CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK else {
            return nil
        }
    }

    deinit { curl_url_cleanup(handle) }

    /// Follows `location` as a redirect from this URL: relative references are resolved (RFC 3986 §5).
    func follow(_ location: String) -> Bool {
        curl_url_set(handle, CURLUPART_URL, location, UInt32(CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK
    }

    /// Lower-case scheme.
    var scheme: String? { part(CURLUPART_SCHEME)?.lowercased() }

    /// The host as libcurl connects to it: a name, an IPv4 address or `[v6]`; lower-case.
    var host: String? { part(CURLUPART_HOST)?.lowercased() }

    /// The port, the scheme's default when the URL names none (CURLU_DEFAULT_PORT).
    var port: Int? { part(CURLUPART_PORT, flags: UInt32(CURLU_DEFAULT_PORT)).flatMap { Int($0) } }

    /// Whether the URL carries a user name (and maybe a password).
    var hasUserInfo: Bool { part(CURLUPART_USER) != nil }

    /// The whole URL as libcurl normalised it.
    var text: String? { part(CURLUPART_URL) }

    private func part(_ what: CURLUPart, flags: UInt32 = 0) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, what, &value, flags) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}
