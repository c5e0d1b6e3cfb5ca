/// One quota's state at an instant: the bytes its period has used (all agents of the spool), and
/// when the period resets. Pure, from the clock and the ledger's counts (docs/config.md "Quotas").
public struct QuotaUsage: Equatable, Sendable {
    /// Where a ledger counts bytes: a period (`daily 2026-03-29`, named by its first day) and a class.
    public struct Key: Hashable, Sendable {
        public var period: String
        public var className: String
        public init(period: String, className: String) {
            self.period = period
            self.className = className
        }
    }

    public var quota: Config.Quota
    /// `daily 2026-03-29`, `weekly 2026-03-23` (its Monday), `monthly 2026-03-01`.
    public var period: String
    public var used: Int64
    /// Seconds since 1970 UTC: local midnight after the day, of the next Monday, of the next 1st.
    public var reset: Int64

    public var left: Int64 { max(0, quota.bytes - used) }
    public var isReached: Bool { used >= quota.bytes }

    /// Every quota's use at `now`, summing the counts of its current period and scope.
    public static func usages(_ quotas: [Config.Quota], counts: [Key: Int64], now: Int64,
                              calendar: LocalCalendar) -> [QuotaUsage] {
        let today = calendar.localTime(now).date
        return quotas.map { quota in
            let period = periodKey(quota.period, on: today)
            let used = counts.reduce(Int64(0)) { sum, entry in
                guard entry.key.period == period, quota.className == nil || quota.className == entry.key.className else { return sum }
                return QuotaLedger.sum(sum, entry.value)
            }
            return QuotaUsage(quota: quota, period: period, used: used,
                              reset: calendar.instant(nextStart(quota.period, after: today), minute: 0))
        }
    }

    /// The first day of the period that holds `date`.
    static func start(_ period: Config.Quota.Period, of date: LocalDate) -> LocalDate {
        switch period {
        case .daily: date
        case .weekly: date.monday
        case .monthly: LocalDate(year: date.year, month: date.month, day: 1)
        }
    }

    /// The first day of the period after the one that holds `date`.
    static func nextStart(_ period: Config.Quota.Period, after date: LocalDate) -> LocalDate {
        switch period {
        case .daily: date.adding(days: 1)
        case .weekly: date.monday.adding(days: 7)
        case .monthly: date.nextMonth
        }
    }

    /// The ledger's name of the period that holds `date`.
    public static func periodKey(_ period: Config.Quota.Period, on date: LocalDate) -> String {
        "\(period.rawValue) \(start(period, of: date))"
    }
}
