/// A URL as duplicates are compared (DESIGN §10 "Duplicates"): the scheme and the host lowercased,
/// the scheme's default port and the fragment dropped, the rest byte for byte; indexed as the
/// first 128 bits of its SHA-256, so that an index in the spool holds no URL and no credential.
enum URLKey {
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
    /// Read from the string's own storage and written through a pointer: one allocation, no
    /// per-byte append (a filed job keys each URL it fetched).
    private static func normalizedBytes(_ url: String) -> [UInt8]? {
        var url = url
        return url.withUTF8 { bytes -> [UInt8]? in
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
            return [UInt8](unsafeUninitializedCapacity: end + 1) { out, count in
                func put(_ range: Range<Int>, lowering: Bool) {
                    for index in range {
                        out[count] = lowering ? lowered(bytes[index]) : bytes[index]
                        count += 1
                    }
                }
                put(0..<authorityStart, lowering: true)
                put(authorityStart..<hostStart, lowering: false)
                put(hostStart..<hostEnd, lowering: true)
                if !port.isEmpty, !isDefault(port: UnsafeBufferPointer(rebasing: bytes[port]),
                                             scheme: UnsafeBufferPointer(UnsafeMutableBufferPointer(rebasing: out[0..<colon]))) {
                    out[count] = UInt8(ascii: ":")
                    count += 1
                    put(port, lowering: false)
                }
                put(authorityEnd..<end, lowering: false)
            }
        }
    }

    /// Whether `port` is the default port of the (lower-cased) `scheme`.
    private static func isDefault(port: UnsafeBufferPointer<UInt8>, scheme: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let expected = defaultPort(of: scheme) else { return false }
        return port.elementsEqual(expected.utf8)
    }

    /// The default port of a lower-cased scheme (RFC 9110 for HTTP, RFC 959, RFC 4217, the SFTP
    /// draft), matched as bytes: no string made, no table hashed.
    private static func defaultPort(of scheme: UnsafeBufferPointer<UInt8>) -> String? {
        func named(_ name: StaticString) -> Bool {
            scheme.count == name.utf8CodeUnitCount
                && scheme.elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        }
        if named("http") { return "80" }
        if named("https") { return "443" }
        if named("ftp") { return "21" }
        if named("ftps") { return "990" }
        if named("sftp") { return "22" }
        return nil
    }
}
