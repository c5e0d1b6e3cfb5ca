import Glibc

/// UTC RFC 3339 timestamps (`2026-11-21T22:00:00Z`) for status files, via gmtime_r(3).
public enum Timestamp {
    public static func now() -> String { format(seconds: Int64(time(nil))) }

    /// The last second formatted and its text: a small job asks for the same second three times
    /// (queued, started, finished), and a text of 20 bytes is an allocation each time.
    /// `Locked`, not `Mutex`: ThreadSanitizer follows its pthread mutex.
    private static let last = Locked<(seconds: Int64, text: String)>((.min, ""))

    public static func format(seconds: Int64) -> String {
        if let text = last.withLock({ $0.seconds == seconds ? $0.text : nil }) { return text }
        let text = formatted(seconds: seconds)
        last.withLock { $0 = (seconds, text) }
        return text
    }

    private static func formatted(seconds: Int64) -> String {
        // Years 0–9999 (every real clock): the date computed from the day count (gmtime_r(3)
        // takes glibc's time zone lock) and the 20 bytes written in place, three status files a job.
        if let parts = civil(seconds: seconds) {
            return String(unsafeUninitializedCapacity: 20) { buffer in
                var at = 0
                func put(_ number: Int32, _ width: Int, _ separator: UInt8?) {
                    var rest = number
                    for index in stride(from: at + width - 1, through: at, by: -1) {
                        buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                        rest /= 10
                    }
                    at += width
                    if let separator { buffer[at] = separator; at += 1 }
                }
                put(parts.tm_year + 1900, 4, UInt8(ascii: "-"))
                put(parts.tm_mon + 1, 2, UInt8(ascii: "-"))
                put(parts.tm_mday, 2, UInt8(ascii: "T"))
                put(parts.tm_hour, 2, UInt8(ascii: ":"))
                put(parts.tm_min, 2, UInt8(ascii: ":"))
                put(parts.tm_sec, 2, UInt8(ascii: "Z"))
                return at
            }
        }
        var value = time_t(seconds)
        var parts = tm()
        gmtime_r(&value, &parts)
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))Z"
    }

    /// The UTC date and time of `seconds` since the epoch as `tm` fields (years since 1900, months
    /// from 0), for years 0–9999; nil outside them. The proleptic Gregorian calendar, as gmtime_r(3)
    /// counts it (`LocalDate(dayNumber:)`).
    static func civil(seconds: Int64) -> tm? {
        // 0000-01-01 and 10000-01-01 in seconds since the epoch.
        guard seconds >= -62_167_219_200, seconds < 253_402_300_800 else { return nil }
        var days = seconds / 86_400
        var second = seconds % 86_400
        if second < 0 {
            second += 86_400
            days -= 1
        }
        let date = LocalDate(dayNumber: Int(days))
        var parts = tm()
        parts.tm_year = Int32(date.year - 1900)
        parts.tm_mon = Int32(date.month - 1)
        parts.tm_mday = Int32(date.day)
        parts.tm_hour = Int32(second / 3_600)
        parts.tm_min = Int32(second % 3_600 / 60)
        parts.tm_sec = Int32(second % 60)
        return parts
    }

    /// Local time with its offset, RFC 3339 (`2026-11-28T15:00:00+01:00`, localtime_r(3) under
    /// TZ): for what a person reads next to a schedule written in local time; JSON keeps UTC.
    public static func local(seconds: Int64) -> String {
        var value = time_t(seconds)
        var parts = tm()
        guard localtime_r(&value, &parts) != nil else { return format(seconds: seconds) }
        let offset = Int(parts.tm_gmtoff)
        let sign = offset < 0 ? "-" : "+"
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))"
            + "\(sign)\(pad(abs(offset) / 3600, 2)):\(pad(abs(offset) % 3600 / 60, 2))"
    }

    /// `number` in decimal, zero-padded to `width` digits (a wider number is written whole).
    private static func pad<Number: BinaryInteger>(_ number: Number, _ width: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    /// Parses the format above back into seconds since the epoch.
    public static func parse(_ text: String) -> Int64? {
        let digits = text.split(whereSeparator: { "-T:Z".contains($0) }).compactMap { Int32($0) }
        guard digits.count == 6, text.hasSuffix("Z") else { return nil }
        var parts = tm()
        parts.tm_year = digits[0] - 1900
        parts.tm_mon = digits[1] - 1
        parts.tm_mday = digits[2]
        parts.tm_hour = digits[3]
        parts.tm_min = digits[4]
        parts.tm_sec = digits[5]
        return Int64(timegm(&parts))
    }
}
