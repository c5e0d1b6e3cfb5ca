/// Parsers for the duration and size notations of docs/config.md, shared by the config and job files.
///
/// Every number is range-checked (docs/config.md): a duration beyond ``maxDuration``, a size beyond
/// ``maxSize`` or digits beyond Int64 are ``Problem/outOfRange``, so that no value read here can
/// overflow the arithmetic of the agent that uses it.
public enum Units {
    /// Why a text is not a duration or a size.
    public enum Problem: Error, Sendable, Equatable {
        /// Not in the notation at all.
        case malformed
        /// In the notation, but beyond ``maxDuration``, ``maxSize`` or Int64.
        case outOfRange
    }

    /// The longest duration accepted: 100 years of 365.25 days.
    public static let maxDuration = Duration.milliseconds(maxDurationMilliseconds)
    static let maxDurationMilliseconds: Int64 = 36_525 * 86_400_000

    /// The largest size accepted, 2^62 bytes: sums and differences of two sizes cannot overflow Int64.
    public static let maxSize: Int64 = 1 << 62

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
    /// Negative numbers, units out of order and other shapes are ``Problem/malformed``; more than
    /// ``maxDuration`` is ``Problem/outOfRange``.
    public static func checkedDuration(_ text: String) throws(Problem) -> Duration {
        if text == "0" { return .zero }
        var rest = Substring(text)
        var total: Int64 = 0
        var lastUnitIndex = -1
        var outOfRange = false
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty else { throw .malformed }
            rest = rest.dropFirst(digits.count)
            let letters = rest.prefix { $0.isASCII && $0.isLetter }
            guard let unitIndex = durationUnits.firstIndex(where: { $0.suffix == letters }),
                  unitIndex > lastUnitIndex
            else { throw .malformed }
            rest = rest.dropFirst(letters.count)
            lastUnitIndex = unitIndex
            // Keep reading after an overflow: a malformed tail is reported as malformed.
            guard !outOfRange, let number = Int64(digits) else {
                outOfRange = true
                continue
            }
            let (part, overflow) = number.multipliedReportingOverflow(by: durationUnits[unitIndex].milliseconds)
            let (sum, sumOverflow) = total.addingReportingOverflow(part)
            if overflow || sumOverflow || sum > maxDurationMilliseconds {
                outOfRange = true
            } else {
                total = sum
            }
        }
        guard lastUnitIndex >= 0 else { throw .malformed }
        guard !outOfRange else { throw .outOfRange }
        return .milliseconds(total)
    }

    /// ``checkedDuration(_:)``, or nil for any problem.
    public static func duration(_ text: String) -> Duration? {
        try? checkedDuration(text)
    }

    /// Parses a byte count: a plain integer, or one with a suffix `B`, `K`/`KB`/`KiB`, `M`…, `G`…, `T`…
    /// (case-insensitive, powers of 1024) as in `64KB`, `10MB`, `2GB`, `500K`.
    ///
    /// Negative numbers, fractions and unknown suffixes are ``Problem/malformed``; more than
    /// ``maxSize`` bytes is ``Problem/outOfRange``.
    public static func checkedSize(_ text: String) throws(Problem) -> Int64 {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let multiplier = sizeSuffixes[text.dropFirst(digits.count).uppercased()] else {
            throw .malformed
        }
        guard let number = Int64(digits) else { throw .outOfRange }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow, bytes <= maxSize else { throw .outOfRange }
        return bytes
    }

    /// ``checkedSize(_:)``, or nil for any problem.
    public static func size(_ text: String) -> Int64? {
        try? checkedSize(text)
    }

    /// Writes a duration back in the notation `duration(_:)` reads, e.g. `1h30m`, `500ms`, `0`.
    public static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000)
        let (sum, carry) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        var remaining = overflow || carry ? Int64.max : sum
        guard remaining > 0 else { return "0" }
        var text = ""
        for unit in durationUnits where remaining >= unit.milliseconds {
            text += "\(remaining / unit.milliseconds)\(unit.suffix)"
            remaining %= unit.milliseconds
        }
        return text
    }

    /// How ``maxDuration`` reads in messages.
    static let maxDurationText = "100 years (36525d)"

    /// How ``maxSize`` reads in messages.
    static let maxSizeText = "2^62 bytes (4611686018427387904)"
}
