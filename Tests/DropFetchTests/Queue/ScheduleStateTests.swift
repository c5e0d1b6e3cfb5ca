import Glibc
import Testing
@testable import DropFetch

extension LocalTimeSuites {
/// The schedule and quota state computed from the clock, in a named time zone (TZ=Europe/Berlin,
/// set for this suite; the other suite that reads local time runs after it, `LocalTimeSuites`):
/// midnight, overlapping windows, and both DST changes of 2026 (29 March 02:00 → 03:00, 25 October
/// 03:00 → 02:00).
@Suite(.serialized) struct ScheduleStateTests {
    private static func inBerlin<T>(_ body: (LocalCalendar) throws -> T) rethrows -> T {
        let saved = getenv("TZ").map { String(cString: $0) }
        setenv("TZ", "Europe/Berlin", 1)
        defer {
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            tzset()
        }
        return try body(LocalCalendar())
    }

    /// Seconds since 1970 of a UTC time.
    private static func utc(_ date: LocalDate, _ hour: Int, _ minute: Int = 0, _ second: Int = 0) -> Int64 {
        Int64(date.dayNumber) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    private static func window(_ yaml: String) throws -> [Config.ScheduleWindow] {
        try ConfigLoader.parse("schedule:\n" + yaml, file: "t.yaml").schedule
    }

    @Test func dateArithmetic() {
        let date = LocalDate(year: 2026, month: 3, day: 29)
        #expect(LocalDate(dayNumber: date.dayNumber) == date)
        #expect(date.weekday == 0)  // a Sunday
        #expect(date.monday == LocalDate(year: 2026, month: 3, day: 23))
        #expect(LocalDate(year: 2026, month: 12, day: 31).nextMonth == LocalDate(year: 2027, month: 1, day: 1))
        #expect(LocalDate(year: 2028, month: 2, day: 28).adding(days: 1) == LocalDate(year: 2028, month: 2, day: 29))
        #expect(LocalDate(year: 1970, month: 1, day: 1).dayNumber == 0)
    }

    @Test func windowAcrossMidnight() throws {
        let schedule = try Self.window("  - { days: Sat, time: \"22:00-06:00\", rate_limit: 1MB }\n")
        Self.inBerlin { calendar in
            let saturday = LocalDate(year: 2026, month: 1, day: 10)  // CET, UTC+1
            let before = ScheduleState(at: Self.utc(saturday, 20, 59, 59), schedule: schedule, calendar: calendar)
            #expect(before.windows.isEmpty && before.rateLimit == nil)
            #expect(before.nextChange == Self.utc(saturday, 21))
            let night = ScheduleState(at: Self.utc(saturday, 23, 30), schedule: schedule, calendar: calendar)
            #expect(night.windows == [0] && night.rateLimit == 1 << 20)
            #expect(night.nextChange == Self.utc(saturday.adding(days: 1), 5))
            // Sunday morning still belongs to Saturday's window; Sunday night is not in it.
            let sunday = ScheduleState(at: Self.utc(saturday.adding(days: 1), 4, 59), schedule: schedule, calendar: calendar)
            #expect(sunday.windows == [0])
            let after = ScheduleState(at: Self.utc(saturday.adding(days: 1), 5), schedule: schedule, calendar: calendar)
            #expect(after.windows.isEmpty)
            #expect(after.nextChange == Self.utc(saturday.adding(days: 7), 21))
            let limits = night.bandwidthLimits(Config())
            #expect(limits.total == 1 << 20)
        }
    }

    @Test func laterWindowsWin() throws {
        let schedule = try Self.window("""
              - { days: daily, time: "08:00-18:00", rate_limit: 1MB, concurrency: 2, classes: { iso: { max_active: 1 } }, pause: true }
              - { days: daily, time: "12:00-13:00", rate_limit: 0, pause: false, classes: { iso: { rate_limit: 100KB } } }

            """ + "classes: [{ name: iso }]\n")
        Self.inBerlin { calendar in
            let day = LocalDate(year: 2026, month: 7, day: 1)  // CEST, UTC+2
            let morning = ScheduleState(at: Self.utc(day, 7), schedule: schedule, calendar: calendar)
            #expect(morning.windows == [0] && morning.pause == .all && morning.rateLimit == 1 << 20)
            #expect(morning.nextChange == Self.utc(day, 10))
            let noon = ScheduleState(at: Self.utc(day, 10, 30), schedule: schedule, calendar: calendar)
            #expect(noon.windows == [0, 1])
            #expect(noon.pause == nil && noon.rateLimit == 0 && noon.concurrency == 2)
            #expect(noon.classes["iso"] == Config.ScheduleWindow.ClassLimits(rateLimit: 100 << 10, maxActive: 1))
            #expect(noon.nextChange == Self.utc(day, 11))
            var config = Config()
            config.limits.rateLimit = 5 << 20
            #expect(noon.bandwidthLimits(config).total == 0)
            #expect(noon.bandwidthLimits(config).perClass["iso"] == 100 << 10)
            #expect(noon.admissionLimits(config).total == 2 && noon.admissionLimits(config).perClass["iso"] == 1)
            #expect(ScheduleState(at: Self.utc(day, 16), schedule: schedule, calendar: calendar).windows.isEmpty)
        }
    }

    @Test func springForwardStartsAtTheJump() throws {
        // 02:30 does not exist on 29 March 2026 in Berlin: the window starts at 03:00 CEST (01:00 UTC).
        let schedule = try Self.window("  - { days: daily, time: \"02:30-03:30\", pause: true }\n")
        Self.inBerlin { calendar in
            let day = LocalDate(year: 2026, month: 3, day: 29)
            let before = ScheduleState(at: Self.utc(day, 0, 59, 59), schedule: schedule, calendar: calendar)
            #expect(before.pause == nil && before.nextChange == Self.utc(day, 1))
            let jumped = ScheduleState(at: Self.utc(day, 1), schedule: schedule, calendar: calendar)
            #expect(jumped.pause == .all && jumped.nextChange == Self.utc(day, 1, 30))
            // The day before, 02:30 CET is 01:30 UTC; the day after, 02:30 CEST is 00:30 UTC.
            let previous = ScheduleState(at: Self.utc(day.adding(days: -1), 1, 30), schedule: schedule, calendar: calendar)
            #expect(previous.pause == .all)
            let next = ScheduleState(at: Self.utc(day.adding(days: 1), 0, 30), schedule: schedule, calendar: calendar)
            #expect(next.pause == .all)
        }
    }

    @Test func fallBackTakesTheFirstOccurrence() throws {
        // 02:30 happens twice on 25 October 2026: at 00:30 UTC (CEST) and 01:30 UTC (CET).
        let schedule = try Self.window("  - { days: daily, time: \"02:30-02:45\", rate_limit: 1KB }\n")
        Self.inBerlin { calendar in
            let day = LocalDate(year: 2026, month: 10, day: 25)
            #expect(ScheduleState(at: Self.utc(day, 0, 29), schedule: schedule, calendar: calendar).nextChange == Self.utc(day, 0, 30))
            #expect(ScheduleState(at: Self.utc(day, 0, 40), schedule: schedule, calendar: calendar).rateLimit == 1024)
            #expect(ScheduleState(at: Self.utc(day, 1, 40), schedule: schedule, calendar: calendar).rateLimit == nil)
        }
    }

    @Test func quotaPeriodsResetAtLocalMidnight() throws {
        Self.inBerlin { calendar in
            let quotas = [Config.Quota(period: .daily, bytes: 100), Config.Quota(period: .weekly, bytes: 1000, className: "iso"),
                          Config.Quota(period: .monthly, bytes: 10_000)]
            let day = LocalDate(year: 2026, month: 3, day: 28)  // Saturday, before the DST change
            let counts: [QuotaUsage.Key: Int64] = [
                .init(period: "daily 2026-03-28", className: "iso"): 60,
                .init(period: "daily 2026-03-28", className: "default"): 50,
                .init(period: "daily 2026-03-27", className: "default"): 500,
                .init(period: "weekly 2026-03-23", className: "iso"): 60,
                .init(period: "monthly 2026-03-01", className: "default"): 50,
            ]
            let usage = QuotaUsage.usages(quotas, counts: counts, now: Self.utc(day, 22, 59), calendar: calendar)
            #expect(usage.map(\.used) == [110, 60, 50])
            #expect(usage.map(\.isReached) == [true, false, false])
            #expect(usage[0].left == 0 && usage[1].left == 940)
            // Local midnight (CET, UTC+1); next Monday midnight and 1 April are in CEST (UTC+2).
            #expect(usage[0].reset == Self.utc(day, 23))
            #expect(usage[1].reset == Self.utc(LocalDate(year: 2026, month: 3, day: 29), 22))
            #expect(usage[2].reset == Self.utc(LocalDate(year: 2026, month: 3, day: 31), 22))
            let nextDay = QuotaUsage.usages(quotas, counts: counts, now: Self.utc(day, 23), calendar: calendar)
            #expect(nextDay[0].used == 0 && nextDay[0].period == "daily 2026-03-29")
            #expect(nextDay[0].reset == Self.utc(LocalDate(year: 2026, month: 3, day: 29), 22))
        }
    }

    @Test func ledgerTextRoundTrips() {
        let counts: [QuotaUsage.Key: Int64] = [.init(period: "daily 2026-03-29", className: "iso"): 42,
                                               .init(period: "monthly 2026-03-01", className: "default"): 7]
        let text = QuotaLedger.text(counts)
        #expect(text == "daily 2026-03-29 iso 42\nmonthly 2026-03-01 default 7\n")
        #expect(QuotaLedger.parse(text + "junk line\nweekly x y -5\n") == counts)
    }
}
}
