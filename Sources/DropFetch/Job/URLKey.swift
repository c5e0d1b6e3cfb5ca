/// A URL as duplicates are compared (DESIGN §10 "Duplicates"): the scheme and the host lowercased,
/// the scheme's default port and the fragment dropped, the rest byte for byte; indexed as the
/// first 128 bits of its SHA-256, so that an index in the spool holds no URL and no credential.
enum URLKey {
    /// Default ports by scheme (RFC 9110 for HTTP, RFC 959, RFC 4217, the SFTP draft).
    private static let defaultPorts = ["http": "80", "https": "443", "ftp": "21", "ftps": "990", "sftp": "22"]

    /// `url` normalized; a string that is no `scheme://authority…` URL is returned as it is.
    static func normalized(_ url: String) -> String {
        guard let separator = url.firstRange(of: "://") else { return url }
        let scheme = url[..<separator.lowerBound].lowercased()
        var rest = url[separator.upperBound...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let tail = rest[authorityEnd...]
        var userinfo = Substring("")
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            userinfo = authority[...at]
            hostPort = authority[authority.index(after: at)...]
        }
        var host = hostPort
        var port: Substring?
        // An IPv6 literal's colons are not its port's.
        let portSearch = hostPort.lastIndex(of: "]") ?? hostPort.startIndex
        if let colon = hostPort[portSearch...].lastIndex(of: ":") {
            host = hostPort[..<colon]
            port = hostPort[hostPort.index(after: colon)...]
        }
        var result = scheme + "://" + userinfo + host.lowercased()
        if let port, !port.isEmpty, String(port) != defaultPorts[scheme] {
            result += ":" + port
        }
        return result + tail
    }

    /// The key of `url` in the done index: 32 lower-case hex digits of SHA-256(normalized URL).
    static func key(_ url: String) -> String {
        let digest = Digest(.sha256)
        var text = normalized(url)
        text.withUTF8 { digest.update(UnsafeRawBufferPointer($0)) }
        return String(digest.finalize().prefix(32))
    }
}
