/// A URL as duplicates are compared (DESIGN §10 "Duplicates"): the scheme and the host lowercased,
/// the scheme's default port and the fragment dropped, the rest byte for byte; indexed as the
/// first 128 bits of its SHA-256, so that an index in the spool holds no URL and no credential.
enum URLKey {
    /// Default ports by scheme (RFC 9110 for HTTP, RFC 959, RFC 4217, the SFTP draft).
    private static let defaultPorts = ["http": "80", "https": "443", "ftp": "21", "ftps": "990", "sftp": "22"]

    /// `url` normalized; a string that is no `scheme://authority…` URL is returned as it is.
    /// Worked on the UTF-8 bytes: a URL's delimiters are ASCII, and Character steps cost a
    /// grapheme break each (70 K instructions a URL).
    static func normalized(_ url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon + 2 < bytes.count,
              bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/") else { return url }
        func lowered(_ range: Range<Int>) -> [UInt8] {
            bytes[range].map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }
        }
        let scheme = lowered(0..<colon)
        let authorityStart = colon + 3
        let end = bytes[authorityStart...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.count
        let authorityEnd = bytes[authorityStart..<end].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? end
        var hostStart = authorityStart
        if let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        // An IPv6 literal's colons are not its port's.
        let portSearch = bytes[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: "]")) ?? hostStart
        var hostEnd = authorityEnd
        var port: ArraySlice<UInt8> = []
        if let portColon = bytes[portSearch..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            hostEnd = portColon
            port = bytes[(portColon + 1)..<authorityEnd]
        }
        var result = scheme + Array("://".utf8)
        result += bytes[authorityStart..<hostStart]
        result += lowered(hostStart..<hostEnd)
        let schemeName = String(decoding: scheme, as: UTF8.self)
        if !port.isEmpty, String(decoding: port, as: UTF8.self) != defaultPorts[schemeName] {
            result.append(UInt8(ascii: ":"))
            result += port
        }
        result += bytes[authorityEnd..<end]
        return String(decoding: result, as: UTF8.self)
    }

    /// The key of `url` in the done index: 32 lower-case hex digits of SHA-256(normalized URL).
    static func key(_ url: String) -> String {
        let digest = Digest(.sha256)
        var text = normalized(url)
        text.withUTF8 { digest.update(UnsafeRawBufferPointer($0)) }
        return String(digest.finalize().prefix(32))
    }
}
