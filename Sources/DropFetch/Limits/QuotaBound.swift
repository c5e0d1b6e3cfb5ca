/// The most bytes one agent can have fetched in a quota period so far, by which every count read
/// from another agent's ledger file is bounded (a spool peer can write that file): the seconds of
/// the period up to now, plus a minute of slack, at the highest rate the config lets an agent
/// fetch, or `ceilingRate` when it sets no total rate limit (docs/security.md "Quotas").
struct QuotaBound: Sendable {
    /// Bytes per second an agent without a total rate limit is taken to fetch at most: 100 Gbit/s.
    static let ceilingRate: Int64 = 12_500_000_000
    /// Seconds of slack for bursts and clocks a little apart.
    static let slackSeconds: Int64 = 60

    /// Bytes per second.
    let rate: Int64
    let calendar: LocalCalendar

    init(rate: Int64, calendar: LocalCalendar = LocalCalendar()) {
        self.rate = max(1, rate)
        self.calendar = calendar
    }

    /// The highest total rate `config` allows anywhere in its schedule; `ceilingRate` when some
    /// window or the config itself sets none.
    init(config: Config, calendar: LocalCalendar = LocalCalendar()) {
        var rates = [config.limits.rateLimit]
        for window in config.schedule { if let rate = window.rateLimit { rates.append(rate) } }
        let highest = rates.contains { $0 <= 0 } ? QuotaBound.ceilingRate : min(QuotaBound.ceilingRate, rates.max() ?? 0)
        self.init(rate: highest, calendar: calendar)
    }

    /// The most a count of the period `key` (`daily 2026-03-29`) can hold at `now` (seconds since
    /// 1970): a period not begun yet is bounded as one just begun, one over by its whole length.
    func limit(period key: String, now: Int64) -> Int64 {
        guard let (period, start) = QuotaBound.period(key) else { return 0 }
        let begin = calendar.instant(start, minute: 0)
        let end = calendar.instant(QuotaUsage.nextStart(period, after: start), minute: 0)
        let seconds = max(0, min(now, end) - begin) + QuotaBound.slackSeconds
        let (bytes, overflow) = seconds.multipliedReportingOverflow(by: rate)
        return overflow ? Units.maxSize : min(Units.maxSize, bytes)
    }

    /// `counts` with each value cut to its period's limit at `now`.
    func bounded(_ counts: [QuotaUsage.Key: Int64], now: Int64) -> [QuotaUsage.Key: Int64] {
        var limits: [String: Int64] = [:]
        var result = counts
        for (key, value) in counts {
            let limit = limits[key.period] ?? self.limit(period: key.period, now: now)
            limits[key.period] = limit
            result[key] = min(value, limit)
        }
        return result
    }

    /// A ledger's period name (`daily 2026-03-29`) as its kind and first day, split on the byte
    /// 0x20 as `QuotaLedger.parse` splits (a combining mark after the space changes nothing).
    static func period(_ key: String) -> (Config.Quota.Period, LocalDate)? {
        let fields = key.utf8.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard fields.count == 2, let period = Config.Quota.Period(rawValue: String(decoding: fields[0], as: UTF8.self)),
              let start = date(Substring(String(decoding: fields[1], as: UTF8.self))) else { return nil }
        return (period, start)
    }

    /// `2026-03-29` as a date; nil when it is not one (years 1...9999).
    static func date(_ text: Substring) -> LocalDate? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) }),
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        return LocalDate(year: year, month: month, day: day)
    }
}
