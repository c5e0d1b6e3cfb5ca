import Testing
@testable import DropFetch

/// Issue 35: what a forged ledger file can do to the sums (saturate, never trap), how far a count
/// is believed (`QuotaBound`), which periods a ledger keeps (`QuotaLedger.isKept`), the attempt
/// ceiling and the page's escaping of format characters.
struct QuotaLedgerTests {
    static let huge = "4611686018427387904"

    @Test("two lines of 2^62 in one file saturate at 2^62; two such files add up to 2^62, not a trap")
    func sumsSaturate() {
        let key = QuotaUsage.Key(period: "daily 2026-01-01", className: "default")
        let once = QuotaLedger.parse("daily 2026-01-01 default \(Self.huge)\n")
        let twice = QuotaLedger.parse("daily 2026-01-01 default \(Self.huge)\ndaily 2026-01-01 default \(Self.huge)\n")
        #expect(twice[key] == Units.maxSize)
        #expect(QuotaLedger.adding(once, to: twice)[key] == Units.maxSize)
        #expect(QuotaLedger.sum(Int64.max, Int64.max) == Units.maxSize)
        let usage = QuotaUsage.usages([Config.Quota(period: .daily, bytes: 1 << 30)],
                                      counts: [key: Int64.max, QuotaUsage.Key(period: key.period, className: "iso"): Int64.max],
                                      now: 1_767_268_800, calendar: LocalCalendar())
        #expect(usage.first?.used == Units.maxSize)
    }

    @Test("what the ledger writes it reads back; a line whose fields are split by other spaces than one byte 0x20 is not misread")
    func roundTrip() {
        let counts = QuotaLedger.parse("daily 2026-01-01 default 5\nweekly 2025-12-29 iso 7\nmonthly 2026-01-01 \u{301}x 9\n")
        #expect(QuotaLedger.parse(QuotaLedger.text(counts)) == counts)
        #expect(counts.count == 3)
    }

    @Test("a count is bounded by the period's seconds so far, plus a minute, at the rate; a period over by its whole length")
    func boundByRate() {
        let calendar = LocalCalendar()
        let midnight = calendar.instant(LocalDate(year: 2026, month: 1, day: 1), minute: 0)
        let bound = QuotaBound(rate: 1000, calendar: calendar)
        #expect(bound.limit(period: "daily 2026-01-01", now: midnight + 100) == 160_000)
        #expect(bound.limit(period: "daily 2025-12-31", now: midnight + 100) == (86_400 + 60) * 1000)
        #expect(bound.limit(period: "daily 2026-01-02", now: midnight + 100) == 60_000)
        #expect(bound.limit(period: "daily nonsense", now: midnight) == 0)
        let key = QuotaUsage.Key(period: "daily 2026-01-01", className: "default")
        #expect(bound.bounded([key: 1 << 40], now: midnight + 100)[key] == 160_000)
        var config = Config()
        config.limits.rateLimit = 2000
        #expect(QuotaBound(config: config).rate == 2000)
        config.limits.rateLimit = 0
        #expect(QuotaBound(config: config).rate == QuotaBound.ceilingRate)
    }

    @Test("the ledger keeps the periods a clock that jumped less than 100 days could come back to, and those ahead")
    func keptPeriods() {
        let today = LocalDate(year: 2026, month: 7, day: 20)
        #expect(QuotaLedger.isKept("monthly 2026-06-01", on: today))
        #expect(QuotaLedger.isKept("daily 2026-06-10", on: today))
        #expect(QuotaLedger.isKept("daily 2026-09-10", on: today))
        #expect(!QuotaLedger.isKept("daily 2026-04-10", on: today))
        #expect(!QuotaLedger.isKept("monthly 2026-03-01", on: today))
        #expect(!QuotaLedger.isKept("yearly 2026-07-01", on: today))
    }

    @Test("attempts that made progress cost none, but no download gets more than 100 in all")
    func attemptCeiling() {
        var policy = Config.Retry()
        policy.attempts = 3
        let outcome = RetryPolicy.Outcome(kind: .network, httpStatus: nil, retryAfter: nil)
        let early = RetryPolicy.Round(mirrorsTried: 1, mirrorCount: 1, attempt: 1, attemptsInAll: 99)
        let last = RetryPolicy.Round(mirrorsTried: 1, mirrorCount: 1, attempt: 1, attemptsInAll: 100)
        #expect(RetryPolicy.decide(outcome, early, policy: policy, jitter: 0) != .fail)
        #expect(RetryPolicy.decide(outcome, last, policy: policy, jitter: 0) == .fail)
    }

    @Test("format characters (U+202E, U+200B) are written as \\u{…} on the page, controls as ?")
    func pageEscapesFormatCharacters() {
        #expect(HTMLText.escape("a\u{202E}b\u{200B}c\u{1}") == "a\\u{202e}b\\u{200b}c?")
    }
}
