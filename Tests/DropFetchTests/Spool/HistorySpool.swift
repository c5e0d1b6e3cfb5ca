import Foundation
@testable import DropFetch

/// A throw-away spool for the history suites: finished records written as an agent files them
/// (`Spool.file`, which also writes the filing journal) or by hand with a chosen `finished` time.
final class HistorySpool {
    let root: String
    let spool: Spool
    var config: Config
    /// Records filed so far by `file`.
    private var filed = 0
    /// When the spool was made (Unix seconds): filed records are stamped from a second later on, and
    /// their `finished` times count back from it, so that records put a second apart in age stay
    /// in that order however slowly the test runs.
    private let started = Int(Date().timeIntervalSince1970)

    init() throws {
        root = FileManager.default.temporaryDirectory.path + "/dropfetch-history-\(UUID().uuidString)"
        for folder in ["inbox", "hold", "work/a", "done", "failed"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        spool = Spool(root: root, agentID: "a", durable: false)
        config = Config()
        config.spool = root
        config.agentID = "a"
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// A record filed through the spool's finish protocol (journal line included), finished `age` seconds ago.
    @discardableResult
    func file(_ name: String, _ outcome: Spool.Outcome, age: Int64 = 0) throws -> String {
        let source = root + "/work/a/" + name
        try "https://h.example/\(name)\n".write(toFile: source, atomically: false, encoding: .utf8)
        var record = StatusRecord(job: name, state: outcome == .done ? .done : .failed, className: "default", priority: 0,
                                  agent: "a", submitted: Timestamp.format(seconds: Int64(started) - age))
        record.finished = Timestamp.format(seconds: Int64(started) - age)
        let path = try spool.file(path: source, as: outcome, status: record)
        // File systems stamp files by a clock tick (about 4 ms): records filed within one tick
        // would have one modification time, and the scan no order among them. Each gets its own,
        // a millisecond apart in filing order.
        filed += 1
        let statusPath = FileSystem.directoryName(of: path) + "/" + Spool.statusName(forJob: FileSystem.baseName(of: path))
        let stamp = timespec(tv_sec: started + 1 + filed / 1000, tv_nsec: (filed % 1000) * 1_000_000)
        var times = [stamp, stamp]
        guard utimensat(AT_FDCWD, statusPath, &times, 0) == 0 else { throw CocoaError(.fileWriteUnknown) }
        return FileSystem.baseName(of: path)
    }

    /// A record pair put into `folder` by hand (no journal line), finished `age` seconds ago.
    func put(_ name: String, in folder: String, age: Int64, status: String? = nil) throws {
        var record = StatusRecord(job: name, state: folder == "done" ? .done : .failed, className: "default", priority: 0,
                                  agent: "a", submitted: "")
        record.finished = Timestamp.format(seconds: Int64(started) - age)
        try "https://h.example/\(name)\n".write(toFile: root + "/\(folder)/\(name)", atomically: false, encoding: .utf8)
        let text = status ?? String(decoding: record.encoded(), as: UTF8.self)
        try text.write(toFile: root + "/\(folder)/" + Spool.statusName(forJob: name), atomically: false, encoding: .utf8)
    }

    func names(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + folder)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// The job names of the recent view as `status` shows it, and as the full scan shows it.
    func recentJobs(limit: Int = 20) -> (shown: [String], scanned: [String]) {
        let shown = SpoolStatus.read(config: config, recentLimit: limit).recent.map(\.job)
        let scanned = SpoolStatus.scanRecent(done: root + "/done", failed: root + "/failed", limit: limit).map(\.job)
        return (shown, scanned)
    }

    var journalPath: String { root + "/" + FilingJournal.prefix + "a" }
}
