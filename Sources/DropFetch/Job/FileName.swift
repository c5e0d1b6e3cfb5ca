/// File-name rules of docs/job-files.md: checks `out=` names and derives safe names from URLs and servers.
///
/// A name that passes ``validate(_:)`` or comes out of ``sanitise(_:)`` is one path component that
/// cannot leave the destination folder, cannot hide as a dot-file (nor collide with `.<file>.part`),
/// and carries no control characters into logs or terminals.
public enum FileName {
    /// NAME_MAX on Linux file systems, in bytes.
    public static let maxBytes = 255
    /// The name used when a URL has no usable last path segment.
    public static let fallback = "index.html"

    /// Returns nil when `name` is a valid `out=` name, otherwise what is wrong with it.
    public static func validate(_ name: String) -> String? {
        // Printable ASCII without '/' and not starting with '.' (nearly every name) passes every
        // check below: one pass over the string's storage instead of six over its generic views.
        var copy = name
        let plain = copy.withUTF8 { bytes in
            !bytes.isEmpty && bytes.count <= maxBytes && bytes[0] != UInt8(ascii: ".")
                && bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }
        }
        if plain { return nil }
        if name.isEmpty { return "is empty" }
        if name == "." || name == ".." { return "may not be '.' or '..'" }
        if name.utf8.contains(UInt8(ascii: "/")) { return "contains '/'" }
        if name.utf8.first == UInt8(ascii: ".") { return "starts with '.'" }
        if name.utf8.contains(0) { return "contains a NUL character" }
        if name.unicodeScalars.contains(where: isControl) { return "contains a control character" }
        if let format = name.unicodeScalars.first(where: isInvisibleFormat) {
            return "contains U+\(String(format.value, radix: 16, uppercase: true)), an invisible formatting"
                + " character (bidi override, zero-width or BOM)"
        }
        let size = name.utf8.count
        if size > maxBytes { return "is \(size) bytes long, more than \(maxBytes)" }
        return nil
    }

    /// The name for a download without `out=`: the URL's last path segment, percent-decoded and sanitised.
    ///
    /// Query and fragment are ignored; a URL whose path ends in `/` (or has none) gives ``fallback``.
    public static func fromURL(_ url: String) -> String {
        var bytes = Array(url.utf8)
        if let end = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            bytes.removeSubrange(end...)
        }
        var path = bytes[...]
        if let separator = firstRange(of: Array("://".utf8), in: bytes) {
            let authority = separator.upperBound
            guard let slash = bytes[authority...].firstIndex(of: UInt8(ascii: "/")) else { return fallback }
            path = bytes[slash...]
        }
        let segment = path.lastIndex(of: UInt8(ascii: "/")).map { path[($0 + 1)...] } ?? path
        return sanitise(decodeReplacing(percentDecoded(segment))) ?? fallback
    }

    /// Makes `candidate` a safe single path component, or nil when nothing usable is left.
    ///
    /// Leading dots and surrounding white space (tabs included) are dropped; then `/`, control
    /// characters (C0, DEL, C1) and invisible format characters (Cf) become `_`; the result is cut to ``maxBytes`` UTF-8 bytes on a character boundary, keeping a
    /// short extension such as `.iso` or `.tar.gz`.
    public static func sanitise(_ candidate: String) -> String? {
        let head = candidate.unicodeScalars.drop { $0 == "." || $0.properties.isWhitespace }
        guard let last = head.lastIndex(where: { !$0.properties.isWhitespace }) else { return nil }
        var scalars = String.UnicodeScalarView()
        for scalar in head[...last] {
            scalars.append(scalar == "/" || isControl(scalar) || isInvisibleFormat(scalar) ? "_" : scalar)
        }
        return truncated(String(scalars))
    }

    /// The file name a `Content-Disposition` header offers (RFC 6266), sanitised; nil when there is none.
    ///
    /// `filename*=` (RFC 8187 ext-value, UTF-8 or ISO-8859-1) is preferred over `filename=`; the
    /// `filename=` value is taken literally (token or quoted-string), not percent-decoded, as RFC 6266
    /// §4.3 asks. `header` may be the field value alone or the whole `Content-Disposition: …` line.
    public static func fromContentDisposition(_ header: String) -> String? {
        let params = dispositionParameters(Array(header.unicodeScalars))
        if let extended = params.first(where: { $0.name == "filename*" }),
           let decoded = decodeExtValue(extended.value),
           let name = sanitise(decoded) {
            return name
        }
        if let plain = params.first(where: { $0.name == "filename" }) {
            return sanitise(plain.value)
        }
        return nil
    }

    /// True for Unicode's format characters (category Cf): bidi overrides and isolates
    /// (U+202A–202E, U+2066–2069), marks (U+200E, U+200F), zero-width ones (U+200B–200D) and the
    /// BOM (U+FEFF). They are invisible, and can make `exe.pdf` of a name that ends in `fdp.exe`.
    static func isInvisibleFormat(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .format
    }

    /// True for C0 controls (including NUL), DEL and C1 controls.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    // MARK: - Truncation

    /// The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends on a Character boundary.
    static func prefix(_ text: String, maxBytes: Int) -> String {
        var kept = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > maxBytes { break }
            kept.append(character)
            used += size
        }
        return kept
    }

    /// `name` itself when it has at most `maxBytes` UTF-8 bytes; else its start followed by `~` and the
    /// 8 hex digits of its FNV-1a hash, `maxBytes` long at most, so that long names stay distinct and
    /// names derived from them (`.<name>.part.json`, `<name>.status.json` and their temp files) fit NAME_MAX.
    static func shortened(_ name: String, maxBytes: Int) -> String {
        guard name.utf8.count > maxBytes else { return name }
        var hash: UInt32 = 0x811C_9DC5
        for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        let digits = String(hash, radix: 16)
        let tag = "~" + String(repeating: "0", count: 8 - digits.count) + digits
        return prefix(name, maxBytes: maxBytes - tag.utf8.count) + tag
    }

    /// Cuts `name` to ``maxBytes`` UTF-8 bytes on a Character boundary, keeping its extension.
    static func truncated(_ name: String) -> String {
        guard name.utf8.count > maxBytes else { return name }
        let ext = extensionSuffix(of: name)
        let stem = String(name.utf8.dropLast(ext.utf8.count)) ?? name
        var kept = ""
        var used = 0
        for character in stem {
            let size = character.utf8.count
            if used + size > maxBytes - ext.utf8.count { break }
            kept.append(character)
            used += size
        }
        while let last = kept.unicodeScalars.last, last.properties.isWhitespace {
            kept.unicodeScalars.removeLast()
        }
        if !kept.isEmpty { return kept + ext }
        // One grapheme cluster longer than the whole budget: fall back to a cut between scalars.
        var scalars = String.UnicodeScalarView()
        used = 0
        for scalar in name.unicodeScalars {
            let size = UTF8.width(scalar)
            if used + size > maxBytes { break }
            scalars.append(scalar)
            used += size
        }
        return String(scalars)
    }

    /// Up to two trailing `.segment` parts of 1–10 ASCII letters or digits (`.iso`, `.tar.gz`), or "".
    static func extensionSuffix(of name: String) -> String {
        let bytes = Array(name.utf8)
        var start = bytes.count
        for _ in 0..<2 {
            var index = start
            while index > 0, isASCIIAlphanumeric(bytes[index - 1]) { index -= 1 }
            let length = start - index
            guard length >= 1, length <= 10, index > 1, bytes[index - 1] == UInt8(ascii: ".") else { break }
            start = index - 1
        }
        return String(decoding: bytes[start...], as: UTF8.self)
    }

    static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    // MARK: - Decoding

    /// RFC 3986 percent-decoding; a `%` not followed by two hex digits stays as it is.
    static func percentDecoded<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "%"), index + 2 < input.count,
               let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(input[index])
                index += 1
            }
        }
        return output
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Decodes UTF-8, turning each ill-formed sequence into `_`.
    static func decodeReplacing(_ bytes: [UInt8]) -> String {
        var iterator = bytes.makeIterator()
        var codec = UTF8()
        var scalars = String.UnicodeScalarView()
        while true {
            switch codec.decode(&iterator) {
            case .scalarValue(let scalar): scalars.append(scalar)
            case .error: scalars.append("_")
            case .emptyInput: return String(scalars)
            }
        }
    }

    static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start..<(start + needle.count)
        }
        return nil
    }

    // MARK: - Content-Disposition

    struct Parameter: Equatable {
        var name: String
        var value: String
    }

    /// The `name=value` parameters of a Content-Disposition value, names lower-cased, quoted-strings unescaped.
    static func dispositionParameters(_ scalars: [Unicode.Scalar]) -> [Parameter] {
        var index = 0
        if let colon = scalars.firstIndex(of: ":"),
           asciiLowercased(trimmedString(scalars[..<colon])) == "content-disposition" {
            index = colon + 1
        }
        var parameters: [Parameter] = []
        while index < scalars.count {
            var nameEnd = index
            while nameEnd < scalars.count, scalars[nameEnd] != "=", scalars[nameEnd] != ";" { nameEnd += 1 }
            let name = asciiLowercased(trimmedString(scalars[index..<nameEnd]))
            index = nameEnd
            guard index < scalars.count, scalars[index] == "=" else {
                index += 1
                continue
            }
            index += 1
            while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
            var value = String.UnicodeScalarView()
            if index < scalars.count, scalars[index] == "\"" {
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\", index + 1 < scalars.count { index += 1 }
                    value.append(scalars[index])
                    index += 1
                }
                while index < scalars.count, scalars[index] != ";" { index += 1 }
                parameters.append(Parameter(name: name, value: String(value)))
            } else {
                let start = index
                while index < scalars.count, scalars[index] != ";" { index += 1 }
                parameters.append(Parameter(name: name, value: trimmedString(scalars[start..<index])))
            }
            index += 1
        }
        return parameters
    }

    /// Decodes an RFC 8187 ext-value `charset'language'pct-encoded`; nil for other charsets or shapes.
    static func decodeExtValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let bytes = percentDecoded(parts[2].utf8)
        switch asciiLowercased(String(parts[0])) {
        case "utf-8":
            return decodeReplacing(bytes)
        case "iso-8859-1":
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            return nil
        }
    }

    static func trimmedString(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        let isBlank: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
              let last = scalars.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0
        }, as: UTF8.self)
    }
}
