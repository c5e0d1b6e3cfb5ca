/// A strict logfmt parser for the tests: a line is `key=value` pairs separated by spaces, a key
/// is non-empty and has no `=`, `"` or space, a value is bare (no space, `"` or `=`) or quoted with
/// `\\`, `\"`, `\n`, `\r`, `\t` and `\u{hex}` escapes. A bare key without `=` is refused, so
/// `2026-11-21T22:00:00Z info job done` is not logfmt.
///
///     let line = try LogfmtLine("ts=1 level=info msg=\"job done\" job=a.url")
///     #expect(line["msg"] == "job done")
struct LogfmtLine: CustomStringConvertible {
    struct Malformed: Error, CustomStringConvertible {
        let line: String
        let reason: String
        var description: String { "not logfmt (\(reason)): \(line)" }
    }

    /// The pairs in line order.
    let pairs: [(key: String, value: String)]
    let text: String

    init(_ text: String) throws {
        self.text = text
        var pairs: [(String, String)] = []
        var rest = Substring(text)
        func fail(_ reason: String) -> Malformed { Malformed(line: text, reason: reason) }
        while true {
            rest = rest.drop { $0 == " " }
            guard let first = rest.first else { break }
            guard first != "=", first != "\"" else { throw fail("a pair starts with \(first)") }
            let key = rest.prefix { $0 != "=" && $0 != " " && $0 != "\"" }
            rest = rest.dropFirst(key.count)
            guard rest.first == "=" else { throw fail("key \(key) has no value") }
            rest = rest.dropFirst()
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var closed = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if character == "\"" { closed = true; break }
                    guard character == "\\" else { value.append(character); continue }
                    guard let escape = rest.first else { throw fail("a dangling backslash") }
                    rest = rest.dropFirst()
                    switch escape {
                    case "\\", "\"": value.append(escape)
                    case "n": value.append("\n")
                    case "r": value.append("\r")
                    case "t": value.append("\t")
                    case "u":
                        guard rest.first == "{", let end = rest.firstIndex(of: "}"),
                              let code = UInt32(rest[rest.index(after: rest.startIndex)..<end], radix: 16),
                              let scalar = Unicode.Scalar(code) else { throw fail("a bad \\u escape") }
                        value.unicodeScalars.append(scalar)
                        rest = rest[rest.index(after: end)...]
                    default: throw fail("an unknown escape \\\(escape)")
                    }
                }
                guard closed else { throw fail("an unclosed quote") }
                guard rest.isEmpty || rest.first == " " else { throw fail("text right after a closing quote") }
            } else {
                let bare = rest.prefix { $0 != " " }
                guard !bare.contains("\""), !bare.contains("=") else { throw fail("a bare value with \" or =: \(bare)") }
                value = String(bare)
                rest = rest.dropFirst(bare.count)
            }
            pairs.append((String(key), value))
        }
        guard !pairs.isEmpty else { throw fail("no pairs") }
        self.pairs = pairs.map { (key: $0.0, value: $0.1) }
    }

    /// The first value of `key`.
    subscript(key: String) -> String? { pairs.first { $0.key == key }?.value }

    var description: String { text }
}
