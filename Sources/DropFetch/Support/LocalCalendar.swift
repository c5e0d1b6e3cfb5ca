#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A day of the proleptic Gregorian calendar, with date arithmetic that needs no time zone
/// (Howard Hinnant's days_from_civil and civil_from_days).
public struct LocalDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    public init(year: Int, month: Int, day: Int) {
        (self.year, self.month, self.day) = (year, month, day)
    }

    /// The date `dayNumber` days after 1970-01-01.
    public init(dayNumber: Int) {
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * shifted + 2) / 5 + 1
        month = shifted < 10 ? shifted + 3 : shifted - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days since 1970-01-01.
    public var dayNumber: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// 0 for Sunday to 6 for Saturday, as `tm_wday`.
    public var weekday: Int { ((dayNumber % 7) + 11) % 7 }

    public func adding(days: Int) -> LocalDate { LocalDate(dayNumber: dayNumber + days) }

    /// The Monday of this date's week.
    public var monday: LocalDate { adding(days: -((weekday + 6) % 7)) }

    /// The first day of the next month.
    public var nextMonth: LocalDate {
        month == 12 ? LocalDate(year: year + 1, month: 1, day: 1) : LocalDate(year: year, month: month + 1, day: 1)
    }

    /// `2026-03-29`.
    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool { a.dayNumber < b.dayNumber }
}

/// A wall-clock reading: the date, the minute after local midnight and the second within it.
public struct LocalTime: Equatable, Sendable {
    public var date: LocalDate
    public var minute: Int
    public var second: Int
}

/// The system's local time (`TZ`, else /etc/localtime) through localtime_r(3) and mktime(3),
/// daylight saving time included.
///
/// A local time that does not exist (skipped by a spring-forward change) is the first instant
/// after it, the moment the clocks jump; one that exists twice (a fall-back change) is the first.
public struct LocalCalendar: Sendable {
    /// Reads `TZ` again (tzset(3)): localtime_r does not.
    public init() { tzset() }

    /// The local date and time at `epoch` (seconds since 1970 UTC).
    public func localTime(_ epoch: Int64) -> LocalTime {
        var value = time_t(epoch)
        var parts = tm()
        guard localtime_r(&value, &parts) != nil else {
            return LocalTime(date: LocalDate(dayNumber: Int(epoch / 86_400)), minute: Int(epoch % 86_400) / 60, second: Int(epoch % 60))
        }
        return LocalTime(date: LocalDate(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday)),
                         minute: Int(parts.tm_hour) * 60 + Int(parts.tm_min), second: Int(parts.tm_sec))
    }

    /// The instant (seconds since 1970 UTC) at which the local clock reads `minute` (0...1440) on `date`.
    public func instant(_ date: LocalDate, minute: Int) -> Int64 {
        if minute >= 1440 { return instant(date.adding(days: minute / 1440), minute: minute % 1440) }
        let found = [Int32(0), 1].compactMap { isDST in
            let epoch = makeTime(date, minute: minute, isDST: isDST)
            return epoch.flatMap { key(localTime($0)) == key(date, minute) ? $0 : nil }
        }
        if let first = found.min() { return first }
        // Skipped by the clocks: the first instant whose local time is later.
        let near = makeTime(date, minute: minute, isDST: -1) ?? Int64(date.dayNumber) * 86_400 + Int64(minute) * 60
        var (low, high) = (near - 4 * 3600, near + 4 * 3600)
        let target = key(date, minute)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if key(localTime(middle)) >= target { high = middle } else { low = middle }
        }
        return high
    }

    private func key(_ time: LocalTime) -> Int { time.date.dayNumber * 1440 + time.minute }
    private func key(_ date: LocalDate, _ minute: Int) -> Int { date.dayNumber * 1440 + minute }

    private func makeTime(_ date: LocalDate, minute: Int, isDST: Int32) -> Int64? {
        var parts = tm()
        parts.tm_year = Int32(date.year - 1900)
        parts.tm_mon = Int32(date.month - 1)
        parts.tm_mday = Int32(date.day)
        parts.tm_hour = Int32(minute / 60)
        parts.tm_min = Int32(minute % 60)
        parts.tm_isdst = isDST
        let epoch = mktime(&parts)
        return epoch == -1 ? nil : Int64(epoch)
    }
}
