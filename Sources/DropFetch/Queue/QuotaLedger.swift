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
/// current ones. The folder exists only when the config has a `quota:`.
final class QuotaLedger {
    /// `<spool>/quota`.
    let folder: String
    let agent: String
    /// This agent's bytes, by period and class.
    private(set) var own: [QuotaUsage.Key: Int64] = [:]
    /// Whether `own` changed since the last `write`.
    private(set) var isDirty = false
    /// The largest ledger file read.
    static let maxFileSize = 64 * 1024

    init(spoolRoot: String, agent: String) {
        folder = spoolRoot + "/quota"
        self.agent = agent
    }

    var path: String { folder + "/" + agent }

    /// Takes up this agent's counts of an earlier run (they count across restarts).
    func load() {
        own = QuotaLedger.read(path) ?? [:]
    }

    /// Counts `bytes` of a class in each period that holds `date`.
    func add(_ bytes: Int64, className: String, on date: LocalDate) {
        guard bytes > 0 else { return }
        for period in Config.Quota.Period.allCases {
            own[QuotaUsage.Key(period: QuotaUsage.periodKey(period, on: date), className: className), default: 0] += bytes
        }
        isDirty = true
    }

    /// Forgets the periods that are over.
    func prune(on date: LocalDate) {
        let current = Set(Config.Quota.Period.allCases.map { QuotaUsage.periodKey($0, on: date) })
        let before = own.count
        own = own.filter { current.contains($0.key.period) }
        if own.count != before { isDirty = true }
    }

    /// Replaces this agent's file with its counts (creating the folder when needed).
    func write() throws(SystemError) {
        try QuotaLedger.write(QuotaLedger.text(own), folder: folder, agent: agent)
        isDirty = false
    }

    /// The counts of every agent's file in `folder` but `agent`'s, summed.
    static func others(in folder: String, except agent: String) -> [QuotaUsage.Key: Int64] {
        var total: [QuotaUsage.Key: Int64] = [:]
        for name in agentFiles(in: folder) where name != agent {
            for (key, bytes) in read(folder + "/" + name) ?? [:] { total[key, default: 0] += bytes }
        }
        return total
    }

    /// `counts` added to `total`.
    static func adding(_ counts: [QuotaUsage.Key: Int64], to total: [QuotaUsage.Key: Int64]) -> [QuotaUsage.Key: Int64] {
        total.merging(counts, uniquingKeysWith: +)
    }

    /// This agent's counts as its file holds them, for a writer on another thread
    /// (`QuotaLedgerSync`); the ledger counts itself clean until that write is said to have failed.
    func takeText() -> String? {
        guard isDirty else { return nil }
        isDirty = false
        return QuotaLedger.text(own)
    }

    /// A write handed to another thread failed: the counts are written again next time.
    func writeFailed() {
        isDirty = true
    }

    /// `write` of `text` to the ledger file of `agent` in `folder`, on any thread.
    static func write(_ text: String, folder: String, agent: String) throws(SystemError) {
        try FileSystem.makeDirectories(folder)
        try AtomicFile.write(Array(text.utf8), to: folder + "/" + agent, durable: false)
    }

    /// The ledger files of a folder: every name not starting with `.` (temp files do).
    static func agentFiles(in folder: String) -> [String] {
        ((try? FileSystem.entries(of: folder)) ?? []).map(\.name).filter { !$0.hasPrefix(".") }
    }

    /// Every agent's counts in a spool's ledger, for `status`.
    static func readAll(spoolRoot: String) -> [QuotaUsage.Key: Int64] {
        var total: [QuotaUsage.Key: Int64] = [:]
        let folder = spoolRoot + "/quota"
        for name in agentFiles(in: folder) {
            for (key, bytes) in read(folder + "/" + name) ?? [:] { total[key, default: 0] += bytes }
        }
        return total
    }

    /// One ledger file's counts; nil when it cannot be read. Opened O_NOFOLLOW|O_NONBLOCK and
    /// checked to be a regular file, at most `maxFileSize` bytes; malformed lines are skipped.
    static func read(_ path: String) -> [QuotaUsage.Key: Int64]? {
        guard let file = try? FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC),
              let info = try? file.status(), info.st_mode & S_IFMT == S_IFREG,
              let bytes = try? file.readAll(limit: maxFileSize) else { return nil }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    static func parse(_ text: String) -> [QuotaUsage.Key: Int64] {
        var counts: [QuotaUsage.Key: Int64] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, Config.Quota.Period(rawValue: String(fields[0])) != nil,
                  let bytes = Int64(fields[3]), bytes >= 0, bytes <= Units.maxSize else { continue }
            let key = QuotaUsage.Key(period: "\(fields[0]) \(fields[1])", className: String(fields[2]))
            counts[key] = min(Units.maxSize, counts[key, default: 0] + bytes)
        }
        return counts
    }

    static func text(_ counts: [QuotaUsage.Key: Int64]) -> String {
        counts.sorted { ($0.key.period, $0.key.className) < ($1.key.period, $1.key.className) }
            .map { "\($0.key.period) \($0.key.className) \($0.value)\n" }.joined()
    }
}
