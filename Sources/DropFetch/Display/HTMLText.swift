/// Text made safe for an HTML page (HTML Living Standard §13.1): every `&`, `<`, `>`, `"` and `'`
/// becomes a character reference, so a job's name, URL or message stays text in an element or a
/// quoted attribute; control characters become `?` (HumanUnits.printable), as on a terminal, and
/// invisible format characters (Unicode Cf: bidi overrides such as U+202E, zero-width ones) are
/// written as `\u{202e}`, as in the logs (Logfmt), so that no name reads other than it is.
enum HTMLText {
    /// `text` escaped for element content and double- or single-quoted attribute values.
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in HumanUnits.printable(text).unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            case _ where scalar.properties.generalCategory == .format:
                result += "\\u{\(String(scalar.value, radix: 16))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `<tag attributes>escaped text</tag>`; `attributes` must already be safe (constants, or escaped).
    static func element(_ tag: String, _ attributes: String = "", text: String) -> String {
        "<\(tag)\(attributes.isEmpty ? "" : " " + attributes)>\(escape(text))</\(tag)>"
    }
}
