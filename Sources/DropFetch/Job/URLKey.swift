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
        guard let bytes = normalizedBytes(url) else { return url }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The key of `url` in the done index: 32 lower-case hex digits of SHA-256(normalized URL).
    static func key(_ url: String) -> String {
        if let bytes = normalizedBytes(url) {
            return bytes.withUnsafeBytes { Digest.sha256Hex($0, bytes: 16) }
        }
        var text = url
        return text.withUTF8 { Digest.sha256Hex(UnsafeRawBufferPointer($0), bytes: 16) }
    }

    /// The normalized URL's bytes, built in one array; nil for a string that is no `scheme://authority…` URL.
    private static func normalizedBytes(_ url: String) -> [UInt8]? {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon + 2 < bytes.count,
              bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/") else { return nil }
        func lowered(_ byte: UInt8) -> UInt8 { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte }
        let authorityStart = colon + 3
        let end = bytes[authorityStart...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.count
        let authorityEnd = bytes[authorityStart..<end].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? end
        var hostStart = authorityStart
        if let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        // An IPv6 literal's colons are not its port's.
        let portSearch = bytes[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: "]")) ?? hostStart
        var hostEnd = authorityEnd
        var port = authorityEnd..<authorityEnd
        if let portColon = bytes[portSearch..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            hostEnd = portColon
            port = (portColon + 1)..<authorityEnd
        }
        var result: [UInt8] = []
        result.reserveCapacity(end)
        for byte in bytes[0..<authorityStart] { result.append(lowered(byte)) }
        result += bytes[authorityStart..<hostStart]
        for byte in bytes[hostStart..<hostEnd] { result.append(lowered(byte)) }
        if !port.isEmpty, !isDefault(port: bytes[port], scheme: result[0..<colon]) {
            result.append(UInt8(ascii: ":"))
            result += bytes[port]
        }
        result += bytes[authorityEnd..<end]
        return result
    }

    /// Whether `port` is the default port of the (lower-cased) `scheme`.
    private static func isDefault(port: ArraySlice<UInt8>, scheme: ArraySlice<UInt8>) -> Bool {
        guard let expected = defaultPorts[String(decoding: scheme, as: UTF8.self)] else { return false }
        return port.elementsEqual(expected.utf8)
    }
}
