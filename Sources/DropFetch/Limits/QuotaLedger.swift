#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes each agent of a spool fetched per quota period: `<spool>/quota/<agent>`, one file
/// per agent that only that agent writes (replaced atomically, temp → rename) and every agent
/// reads and sums, so that agents share a quota without a coordinator (docs/spool.md).
///
/// A file is lines of `<period> <first day> <class> <bytes>`, such as `daily 2026-03-29 iso 1048576`;
/// an agent counts every period (daily, weekly, monthly) for each class, and keeps only the
/// periods a wrong clock could come back to (`keepDays`). The folder exists only when the config
/// has a `quota:`. Nothing read from a file traps: sums saturate at `Units.maxSize`; only the
/// files of agents with a work folder count, each value bounded (`QuotaBound`, docs/security.md).
final class QuotaLedger {
    /// `<spool>/quota`.
    let folder: String
    let agent: String
    /// This agent's bytes, by period and class.
    private(set) var own: [QuotaUsage.Key: Int64] = [:]
    /// Whether `own` changed since the last `write`.
    private(set) var isDirty = false
    private var writeState = WriteState.writable

    /// Whether this agent's file can be written: after a failure, writes wait (`Backoff.spoolStep`).
    private enum WriteState {
        case writable
        /// The last write failed with this error, the `failures`-th in a row; the next is due at `retryAt` (monotonic ms).
        case failing(SystemError, failures: Int, retryAt: Int64)
    }
    /// The largest ledger file read.
    static let maxFileSize = 64 * 1024
    /// Days after its end a period is forgotten: a clock that jumps less far and comes back loses no count.
    static let keepDays = 100

    init(spoolRoot: String, agent: String) {
        folder = spoolRoot + "/quota"
        self.agent = agent
    }

    var path: String { FileSystem.join(folder, agent) }

    /// Takes up this agent's counts of an earlier run (they count across restarts).
    func load() {
        own = QuotaLedger.read(path) ?? [:]
    }

    /// Counts `bytes` of a class in each period that holds `date`.
    func add(_ bytes: Int64, className: String, on date: LocalDate) {
        guard bytes > 0 else { return }
        for period in Config.Quota.Period.allCases {
            let key = QuotaUsage.Key(period: QuotaUsage.periodKey(period, on: date), className: className)
            own[key] = QuotaLedger.sum(own[key, default: 0], bytes)
        }
        isDirty = true
    }

    /// Forgets the periods that ended `keepDays` or more before `date` (and unreadable keys); the
    /// others stay, so that a clock jumping ahead and back loses no count.
    func prune(on date: LocalDate) {
        let before = own.count
        own = own.filter { QuotaLedger.isKept($0.key.period, on: date) }
        if own.count != before { isDirty = true }
    }

    /// Whether the period `key` (`daily 2026-03-29`) is kept on `date`: it ended less than `keepDays` ago, or later.
    static func isKept(_ key: String, on date: LocalDate) -> Bool {
        guard let (period, start) = QuotaBound.period(key) else { return false }
        return QuotaUsage.nextStart(period, after: start).dayNumber > date.dayNumber - keepDays
    }

    /// `a + b` for counts of at least 0, stopping at `Units.maxSize` instead of trapping.
    static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (total, overflow) = max(0, a).addingReportingOverflow(max(0, b))
        return overflow ? Units.maxSize : min(Units.maxSize, total)
    }

    /// Replaces this agent's file with its counts (creating the folder when needed).
    func write() throws(SystemError) {
        try QuotaLedger.write(QuotaLedger.text(own), folder: folder, agent: agent)
        isDirty = false
    }

    /// The counts of every known agent's file in `folder` but `agent`'s, each bounded at `now`, summed.
    static func others(in folder: String, except agent: String, bound: QuotaBound, now: Int64) -> [QuotaUsage.Key: Int64] {
        var total: [QuotaUsage.Key: Int64] = [:]
        for name in agentFiles(in: folder) where name != agent {
            total = adding(bound.bounded(read(FileSystem.join(folder, name)) ?? [:], now: now), to: total)
        }
        return total
    }

    /// `counts` added to `total`, saturating.
    static func adding(_ counts: [QuotaUsage.Key: Int64], to total: [QuotaUsage.Key: Int64]) -> [QuotaUsage.Key: Int64] {
        total.merging(counts, uniquingKeysWith: sum)
    }

    /// This agent's counts as its file holds them, for a writer on another thread
    /// (`QuotaLedgerSync`), when a write is due at `now` (monotonic ms); the ledger counts itself
    /// clean until that write is said to have failed.
    func takeText(now: Int64) -> String? {
        guard isWriteDue(now: now) else { return nil }
        isDirty = false
        return QuotaLedger.text(own)
    }

    /// Whether the counts changed and no failed write holds the next one back at `now` (monotonic ms).
    func isWriteDue(now: Int64) -> Bool {
        guard isDirty else { return false }
        if case .failing(_, _, let retryAt) = writeState { return now >= retryAt }
        return true
    }

    /// Monotonic ms when a backed-off write of changed counts is due; nil when none waits.
    var writeRetryAt: Int64? {
        guard isDirty, case .failing(_, _, let retryAt) = writeState else { return nil }
        return retryAt
    }

    /// A write failed at `now` (monotonic ms): the counts are written again after a backoff that
    /// doubles from a second to a minute. Returns whether the failure is new (not the same error
    /// as the last write's), so that it is logged once per change, not at every try.
    func writeFailed(_ error: SystemError, now: Int64) -> Bool {
        isDirty = true
        var failures = 1
        var isNew = true
        if case .failing(let last, let count, _) = writeState {
            failures = count + 1
            isNew = last.code != error.code || last.operation != error.operation
        }
        let delay = Int64(Backoff.spoolStep(failures: failures, initial: .seconds(1)).milliseconds)
        writeState = .failing(error, failures: failures, retryAt: now + delay)
        return isNew
    }

    /// A write succeeded; returns whether writes had been failing (so that the recovery is logged).
    func writeSucceeded() -> Bool {
        guard case .failing = writeState else { return false }
        writeState = .writable
        return true
    }

    /// `write` of `text` to the ledger file of `agent` in `folder`, on any thread.
    static func write(_ text: String, folder: String, agent: String) throws(SystemError) {
        try FileSystem.makeDirectories(folder, trusting: FileSystem.directoryName(of: folder))
        try AtomicFile.write(Array(text.utf8), to: FileSystem.join(folder, agent), durable: false)
    }

    /// The ledger files of a folder that count: every name not starting with `.` (temp files do)
    /// of an agent the spool knows, one with a work folder (`<spool>/work/<name>/`).
    static func agentFiles(in folder: String) -> [String] {
        let workRoot = String(folder.dropLast("quota".count)) + "work/"
        return ((try? FileSystem.entries(of: folder)) ?? []).map(\.name)
            .filter { !$0.hasPrefix(".") && FileSystem.isDirectory(workRoot + $0) }
    }

    /// Every known agent's counts in a spool's ledger, each bounded at `now`, for `status`.
    static func readAll(spoolRoot: String, bound: QuotaBound, now: Int64) -> [QuotaUsage.Key: Int64] {
        others(in: spoolRoot + "/quota", except: "", bound: bound, now: now)
    }

    /// One ledger file's counts; nil when it cannot be read. Opened O_NOFOLLOW|O_NONBLOCK and
    /// checked to be a regular file, at most `maxFileSize` bytes; malformed lines are skipped.
    static func read(_ path: String) -> [QuotaUsage.Key: Int64]? {
        guard let file = try? FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC),
              let info = try? file.status(), info.st_mode & S_IFMT == S_IFREG,
              let bytes = try? file.readAll(limit: maxFileSize) else { return nil }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    /// A ledger file's counts, split on the bytes of newline and space (so that what `text`
    /// writes reads back the same); malformed lines are skipped, sums saturate.
    static func parse(_ text: String) -> [QuotaUsage.Key: Int64] {
        var counts: [QuotaUsage.Key: Int64] = [:]
        for line in text.utf8.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 4, Config.Quota.Period(rawValue: fields[0]) != nil,
                  let bytes = Int64(fields[3]), bytes >= 0, bytes <= Units.maxSize else { continue }
            let key = QuotaUsage.Key(period: "\(fields[0]) \(fields[1])", className: fields[2])
            counts[key] = sum(counts[key, default: 0], bytes)
        }
        return counts
    }

    static func text(_ counts: [QuotaUsage.Key: Int64]) -> String {
        counts.sorted { ($0.key.period, $0.key.className) < ($1.key.period, $1.key.className) }
            .map { "\($0.key.period) \($0.key.className) \($0.value)\n" }.joined()
    }
}
