/// logfmt encoding of log lines (`key=value key="a value"`): a value is quoted when it is empty
/// or holds a space, `"`, `=`, a control character or an invisible format character, so any
/// logfmt parser reads back exactly what was logged, no value can forge a second line or drive a
/// terminal, and no bidi override (U+202E) can make a line read other than it is.
public enum Logfmt {
    /// `text` as a logfmt value: bare when that is unambiguous, else in double quotes with `\`,
    /// `"`, LF, CR and TAB escaped as `\\`, `\"`, `\n`, `\r`, `\t` and the other C0 and C1
    /// controls, DEL and format characters (Unicode Cf: bidi, zero-width, BOM) as `\u{…}` (hex).
    public static func value(_ text: String) -> String {
        guard text.isEmpty || text.unicodeScalars.contains(where: needsQuotes) else { return text }
        var result = String.UnicodeScalarView()
        result.append("\"")
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result.append(contentsOf: "\\\\".unicodeScalars)
            case "\"": result.append(contentsOf: "\\\"".unicodeScalars)
            case "\n": result.append(contentsOf: "\\n".unicodeScalars)
            case "\r": result.append(contentsOf: "\\r".unicodeScalars)
            case "\t": result.append(contentsOf: "\\t".unicodeScalars)
            default:
                if isControl(scalar) {
                    result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
                } else {
                    result.append(scalar)
                }
            }
        }
        result.append("\"")
        return String(result)
    }

    /// `text` as a logfmt key: letters, digits, `_`, `.` and `-` kept, anything else `_`.
    public static func key(_ text: String) -> String {
        let kept = text.unicodeScalars.map { scalar -> Character in
            let ascii = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))
            return ascii || scalar == "_" || scalar == "." || scalar == "-" ? Character(scalar) : "_"
        }
        return kept.isEmpty ? "_" : String(kept)
    }

    /// `key=value`, both encoded.
    public static func pair(_ key: String, _ value: String) -> String {
        Logfmt.key(key) + "=" + Logfmt.value(value)
    }

    /// `text` with C0 controls (LF and TAB included), DEL, C1 controls and format characters (Cf)
    /// written as `\u{…}` and
    /// nothing quoted: a message that leads a journal line, readable and still one line.
    public static func escapedControls(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    private static func needsQuotes(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\"" || scalar == "=" || isControl(scalar)
            || scalar.properties.generalCategory == .lineSeparator
            || scalar.properties.generalCategory == .paragraphSeparator
            || scalar.properties.generalCategory == .spaceSeparator
    }

    /// C0, DEL, C1, and the invisible format characters (Cf) such as U+202E and U+200B.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.properties.generalCategory == .format
    }
}
