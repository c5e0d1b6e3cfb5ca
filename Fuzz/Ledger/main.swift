// libFuzzer target for the quota ledger files a spool peer can write (`<spool>/quota/<agent>`, docs/spool.md):
// QuotaLedger.parse, its saturating sums, QuotaBound and the pruning rule; compiled with Sources/DropFetch by Fuzz/run.sh.
import Glibc

/// Stops the run with `message`: libFuzzer records the input as a crash.
func violated(_ message: String) -> Never {
    fatalError("invariant violated: \(message)")
}

/// A fixed "now" (2026-01-01), so that a crash reproduces.
let now: Int64 = 1_767_225_600
let today = LocalDate(year: 2026, month: 1, day: 1)
let quotas = [Config.Quota(period: .daily, bytes: 1 << 30), Config.Quota(period: .monthly, bytes: Units.maxSize, className: "iso")]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let counts = QuotaLedger.parse(text)
    for (key, value) in counts {
        if !(0...Units.maxSize).contains(value) { violated("count \(value) of \(key) out of range") }
        let kind = key.period.utf8.prefix { $0 != UInt8(ascii: " ") }
        if Config.Quota.Period(rawValue: String(decoding: kind, as: UTF8.self)) == nil { violated("period \(key.period)") }
    }
    // What the agent writes it reads back unchanged.
    let written = QuotaLedger.text(counts)
    if QuotaLedger.parse(written) != counts { violated("the counts do not survive a round trip: \(counts)") }
    // The same file twice, three times (two agents, one file read twice): sums saturate, never trap.
    let doubled = QuotaLedger.adding(counts, to: QuotaLedger.parse(text + "\n" + text))
    for (key, value) in doubled where !(0...Units.maxSize).contains(value) { violated("sum \(value) of \(key) out of range") }
    for rate in [Int64(1), 1_000_000, QuotaBound.ceilingRate] {
        let bound = QuotaBound(rate: rate)
        let bounded = bound.bounded(doubled, now: now)
        for (key, value) in bounded {
            let limit = bound.limit(period: key.period, now: now)
            if !(0...Units.maxSize).contains(limit) { violated("limit \(limit) of \(key.period) out of range") }
            if value > limit || value > doubled[key] ?? 0 || value < 0 { violated("bounded \(value) of \(key) above \(limit)") }
        }
        for usage in QuotaUsage.usages(quotas, counts: bounded, now: now, calendar: bound.calendar) {
            if !(0...Units.maxSize).contains(usage.used) { violated("use \(usage.used) out of range") }
        }
    }
    // The current periods are always kept, whatever else the file holds.
    for key in counts.keys where !QuotaLedger.isKept(key.period, on: today) {
        if Config.Quota.Period.allCases.contains(where: { QuotaUsage.periodKey($0, on: today) == key.period }) {
            violated("the current period \(key.period) would be pruned")
        }
    }
    return 0
}
