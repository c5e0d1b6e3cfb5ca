import CCurl

/// A URL held by libcurl's own parser (curl_url(3)): the same code that decides where a request
/// goes decides what its origin is, so no second parser can disagree with it about a hostile URL
/// (`http://a.example\@b.example/`, `0x7f.1`, a relative `//host/x`).
final class CurlURL {
    private let handle: OpaquePointer

    /// The flags libcurl 7.88 uses itself when it follows a redirect (`Curl_follow`): a scheme it
    /// was not built for still parses (the allow-list refuses it later, with its own kind),
    /// spaces are allowed and anything outside ASCII is percent-encoded.
    private static let followFlags = UInt32(CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE | CURLU_ALLOW_SPACE)

    /// Parses an absolute URL.
    init(_ url: String) throws(CurlURLError) {
        guard let handle = curl_url() else { throw CurlURLError(CURLUE_OUT_OF_MEMORY) }
        self.handle = handle
        try set(CURLUPART_URL, url, flags: CurlURL.followFlags)
    }

    /// Resolves `reference` (a `Location` value: absolute, scheme-relative or relative) against
    /// `base`, as libcurl does when it follows a redirect.
    convenience init(_ reference: String, relativeTo base: String) throws(CurlURLError) {
        try self.init(base)
        try set(CURLUPART_URL, reference, flags: CurlURL.followFlags)
    }

    deinit { curl_url_cleanup(handle) }

    /// The whole URL, normalised by libcurl.
    var string: String? { part(CURLUPART_URL) }

    /// The scheme in lower case (libcurl lower-cases it while parsing).
    var scheme: String? { part(CURLUPART_SCHEME) }

    /// The host as written in the URL (IPv6 in brackets), lower-cased here: DNS names are
    /// case-insensitive and libcurl 7.88 keeps their case.
    var host: String? { part(CURLUPART_HOST)?.lowercased() }

    /// The port, or the scheme's default port when the URL names none (nil for a scheme libcurl
    /// does not know).
    var port: Int? { part(CURLUPART_PORT, flags: UInt32(CURLU_DEFAULT_PORT)).flatMap { Int($0) } }

    /// The userinfo as written (still percent-encoded), or nil.
    var user: String? { part(CURLUPART_USER) }
    var password: String? { part(CURLUPART_PASSWORD) }

    /// Sets (or with nil, removes) the userinfo; values are taken as already percent-encoded.
    func setCredentials(user: String?, password: String?) throws(CurlURLError) {
        try set(CURLUPART_USER, user, flags: 0)
        try set(CURLUPART_PASSWORD, user == nil ? nil : password, flags: 0)
        try set(CURLUPART_OPTIONS, nil, flags: 0)
    }

    /// Drops the `#fragment`, which never goes to the server.
    func clearFragment() throws(CurlURLError) {
        try set(CURLUPART_FRAGMENT, nil, flags: 0)
    }

    private func set(_ part: CURLUPart, _ value: String?, flags: UInt32) throws(CurlURLError) {
        let code = value.map { text in text.withCString { curl_url_set(handle, part, $0, flags) } }
            ?? curl_url_set(handle, part, nil, flags)
        if code != CURLUE_OK { throw CurlURLError(code) }
    }

    /// One part as text; nil when the URL has none (CURLUE_NO_USER, CURLUE_NO_PORT, …).
    private func part(_ part: CURLUPart, flags: UInt32 = 0) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, part, &value, flags) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}

/// A failure of libcurl's URL parser (curl_url_strerror(3)).
struct CurlURLError: Error, Sendable, Equatable, CustomStringConvertible {
    var code: Int

    init(_ code: CURLUcode) { self.code = Int(code.rawValue) }

    var description: String {
        String(cString: curl_url_strerror(CURLUcode(rawValue: UInt32(code))))
    }
}
