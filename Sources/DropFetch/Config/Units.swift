/// Parsers for the duration and size notations of docs/config.md, shared by the config and job files.
public enum Units {
    /// Duration units in descending order, with their length in milliseconds.
    private static let durationUnits: [(suffix: String, milliseconds: Int64)] = [
        ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1),
    ]

    /// Size suffixes (upper-cased) and their multipliers, powers of 1024.
    private static let sizeSuffixes: [String: Int64] = [
        "": 1, "B": 1,
        "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
        "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
        "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
        "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40,
    ]

    /// Parses `500ms`, `30s`, `10m`, `2h`, `1d`, compounds in descending order such as `1h30m`, and bare `0`.
    ///
    /// Returns nil for anything else, including negative numbers, units out of order and overflow.
    public static func duration(_ text: String) -> Duration? {
        if text == "0" { return .zero }
        var rest = Substring(text)
        var total: Int64 = 0
        var lastUnitIndex = -1
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let number = Int64(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            let letters = rest.prefix { $0.isASCII && $0.isLetter }
            guard let unitIndex = durationUnits.firstIndex(where: { $0.suffix == letters }),
                  unitIndex > lastUnitIndex
            else { return nil }
            rest = rest.dropFirst(letters.count)
            lastUnitIndex = unitIndex
            let (part, overflow) = number.multipliedReportingOverflow(by: durationUnits[unitIndex].milliseconds)
            guard !overflow else { return nil }
            let (sum, sumOverflow) = total.addingReportingOverflow(part)
            guard !sumOverflow else { return nil }
            total = sum
        }
        return lastUnitIndex < 0 ? nil : .milliseconds(total)
    }

    /// Parses a byte count: a plain integer, or one with a suffix `B`, `K`/`KB`/`KiB`, `M`…, `G`…, `T`…
    /// (case-insensitive, powers of 1024) as in `64KB`, `10MB`, `2GB`, `500K`.
    ///
    /// Returns nil for anything else, including negative numbers, fractions and overflow.
    public static func size(_ text: String) -> Int64? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int64(digits),
              let multiplier = sizeSuffixes[text.dropFirst(digits.count).uppercased()]
        else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }

    /// Writes a duration back in the notation `duration(_:)` reads, e.g. `1h30m`, `500ms`, `0`.
    public static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        var remaining = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        guard remaining > 0 else { return "0" }
        var text = ""
        for unit in durationUnits where remaining >= unit.milliseconds {
            text += "\(remaining / unit.milliseconds)\(unit.suffix)"
            remaining %= unit.milliseconds
        }
        return text
    }
}
