/// Sizes, speeds and durations for people (status, progress, logs): powers of 1024 as in the
/// config's sizes, written with IEC names (`KiB`, `MiB`, `GiB`) so that nobody reads them as 1000s.
public enum HumanUnits {
    private static let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

    /// `512 B`, `1.5 KiB`, `12.3 MiB`, `2.00 GiB`: one decimal (two from GiB up), rounded.
    public static func bytes(_ count: Int64) -> String {
        let value = max(count, 0)
        if value < 1024 { return "\(value) B" }
        var scaled = Double(value) / 1024
        var unit = 0
        while scaled >= 1024, unit < units.count - 1 {
            scaled /= 1024
            unit += 1
        }
        // 1023.96 KiB rounds to "1024.0 KiB": say 1.0 MiB instead.
        if scaled >= 1023.95, unit < units.count - 1 {
            scaled /= 1024
            unit += 1
        }
        return fixed(scaled, digits: unit >= 2 ? 2 : 1) + " " + units[unit]
    }

    /// `850 B/s`, `200.0 KiB/s`, `4.5 MiB/s`.
    public static func rate(_ bytesPerSecond: Int64) -> String { bytes(bytesPerSecond) + "/s" }

    /// The same without the space, for a log value that needs no quotes: `4.5MiB/s`.
    public static func compactRate(_ bytesPerSecond: Int64) -> String {
        String(rate(bytesPerSecond).filter { $0 != " " })
    }

    /// A span for people, two units at most: `45s`, `3m05s`, `1h02m`, `2d03h`.
    public static func duration(seconds: Int64) -> String {
        let value = max(seconds, 0)
        func two(_ number: Int64) -> String { number < 10 ? "0\(number)" : "\(number)" }
        if value < 60 { return "\(value)s" }
        if value < 3600 { return "\(value / 60)m\(two(value % 60))s" }
        if value < 86_400 { return "\(value / 3600)h\(two(value % 3600 / 60))m" }
        return "\(value / 86_400)d\(two(value % 86_400 / 3600))h"
    }

    /// Seconds with millisecond precision and a unit, for logs: `0.012s`, `188.400s`.
    public static func seconds(_ value: Double) -> String {
        fixed(max(0, value), digits: 3) + "s"
    }

    /// The time left at `bytesPerSecond` for what is missing of `size`; nil when either is unknown.
    public static func eta(bytes: Int64, size: Int64?, bytesPerSecond: Int64?) -> Int64? {
        guard let size, let speed = bytesPerSecond, speed > 0, size >= bytes else { return nil }
        return (size - bytes + speed - 1) / speed
    }

    /// The percentage done, rounded down (100 only when complete); nil when the size is unknown.
    public static func percent(bytes: Int64, size: Int64?) -> Int? {
        guard let size, size > 0 else { return size == 0 ? 100 : nil }
        return Int(min(100, max(0, bytes) * 100 / size))
    }

    /// `text` with every control character (ESC included) shown as `?`: a job's name never
    /// drives the terminal.
    public static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? "?" : scalar
        }))
    }

    /// `value` with exactly `digits` decimals, without Foundation's formatters.
    static func fixed(_ value: Double, digits: Int) -> String {
        var scale: Double = 1
        for _ in 0..<digits { scale *= 10 }
        let units = (value * scale).rounded()
        guard units.isFinite, units < 9e17 else { return "\(value)" }
        let whole = Int64(units)
        let integer = whole / Int64(scale)
        guard digits > 0 else { return "\(integer)" }
        var fraction = String(whole % Int64(scale))
        while fraction.count < digits { fraction = "0" + fraction }
        return "\(integer).\(fraction)"
    }
}
