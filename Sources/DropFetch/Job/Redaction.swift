/// Hides credentials in URLs and header lines before they reach logs or status files (docs/status-files.md).
public enum Redaction {
    /// Header names (lower case) whose values are secrets.
    static let secretHeaders = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Replaces the userinfo of `s` (`user:pass@` or `user@`) by `***@`.
    ///
    /// With `://` the userinfo is what precedes the last `@` before the first `/` after it (RFC 3986
    /// §3.2, but a `?` or `#` does not end it, so a raw `#` in a password cannot leak it). A string
    /// without `://` (a malformed URL quoted in an error) loses everything from the last `/` before its
    /// last `@` up to that `@`, as long as that `@` comes before any `?` or `#`.
    public static func url(_ s: String) -> String {
        // Nothing to hide without an `@` (most URLs): the string is kept without a copy.
        var storage = s
        guard storage.withUTF8({ $0.contains(UInt8(ascii: "@")) }) else { return s }
        let bytes = Array(s.utf8)
        let slash = UInt8(ascii: "/")
        let at = UInt8(ascii: "@")
        if let separator = FileName.firstRange(of: Array("://".utf8), in: bytes) {
            let start = separator.upperBound
            let end = bytes[start...].firstIndex(of: slash) ?? bytes.count
            guard let last = bytes[start..<end].lastIndex(of: at) else { return s }
            return text(bytes[..<start]) + "***@" + text(bytes[(last + 1)...])
        }
        let limit = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        guard let last = bytes[..<limit].lastIndex(of: at) else { return s }
        let start = bytes[..<last].lastIndex(of: slash).map { $0 + 1 } ?? 0
        return text(bytes[..<start]) + "***@" + text(bytes[(last + 1)...])
    }

    /// Replaces the value of an `Authorization`, `Proxy-Authorization`, `Cookie` or `Set-Cookie` line by `***`.
    ///
    /// The name is matched case-insensitively. A line without `:` that starts with one of these
    /// names (a mistyped header) keeps only the name, so a token never leaks through an error message.
    public static func header(_ line: String) -> String {
        let bytes = Array(line.utf8)
        let lower = bytes.map(asciiLowercased)
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            let name = String(decoding: lower[..<colon], as: UTF8.self)
                .trimmingBlanks()
            guard secretHeaders.contains(name) else { return line }
            return text(bytes[...colon]) + " ***"
        }
        let leading = lower.prefix { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }.count
        for name in secretHeaders where lower[leading...].starts(with: name.utf8) {
            return text(bytes[..<(leading + name.utf8.count)]) + " ***"
        }
        return line
    }

    private static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    fileprivate func trimmingBlanks() -> String {
        let bytes = Array(utf8)
        let isBlank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
              let last = bytes.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
