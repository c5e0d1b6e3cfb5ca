import Foundation
import Testing
@testable import DropFetch

/// DESIGN.md §10 "History": what `history:` and `dropfetch purge` remove from done/ and failed/,
/// and what they never touch.
@Suite("History retention")
struct HistoryRetentionTests {
    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    @Test("keep: 3s removes the pairs finished over 3 s ago, job file and status file, and nothing else")
    func keepRemovesExpired() throws {
        let spool = try HistorySpool()
        try spool.put("old.url", in: "done", age: 60)
        try spool.put("older.url", in: "failed", age: 3600)
        try spool.put("fresh.url", in: "done", age: 0)
        try "https://h.example/held\n".write(toFile: spool.root + "/hold/held.url", atomically: false, encoding: .utf8)
        try "https://h.example/new\n".write(toFile: spool.root + "/inbox/new.url", atomically: false, encoding: .utf8)
        try "https://h.example/w\n".write(toFile: spool.root + "/work/a/w.url", atomically: false, encoding: .utf8)
        let retention = HistoryRetention(spoolRoot: spool.root)

        let selection = try retention.select(Config.History(keep: .seconds(3)), now: Self.now())
        let removal = retention.remove(selection)

        #expect(removal.removed == 2 && removal.error == nil)
        #expect(spool.names("done") == ["fresh.status.json", "fresh.url"])
        #expect(spool.names("failed") == [])
        #expect(spool.names("hold") == ["held.url"])
        #expect(spool.names("inbox") == ["new.url"])
        #expect(spool.names("work/a") == ["w.url"])
    }

    @Test("max_jobs: 3 keeps the three newest of done/ and failed/ together")
    func maxJobsKeepsNewest() throws {
        let spool = try HistorySpool()
        for (index, folder) in ["done", "failed", "done", "failed", "done", "done"].enumerated() {
            try spool.put("j\(index).url", in: folder, age: Int64(600 - index * 60))
        }
        let retention = HistoryRetention(spoolRoot: spool.root)
        let removal = retention.remove(try retention.select(Config.History(maxJobs: 3), now: Self.now()))
        #expect(removal.removed == 3)
        #expect(spool.names("done") == ["j4.status.json", "j4.url", "j5.status.json", "j5.url"])
        #expect(spool.names("failed") == ["j3.status.json", "j3.url"])
    }

    @Test("a status file that cannot be read is kept and not counted; a lone status file goes once old enough")
    func unreadableKeptLoneRemoved() throws {
        let spool = try HistorySpool()
        try spool.put("garbled.url", in: "done", age: 0, status: "{ not json")
        try spool.put("old.url", in: "done", age: 7200)
        // A pass stopped between the job file and the status file.
        try spool.put("half.url", in: "failed", age: 7200)
        try FileManager.default.removeItem(atPath: spool.root + "/failed/half.url")
        let retention = HistoryRetention(spoolRoot: spool.root)
        let selection = try retention.select(Config.History(keep: .seconds(60)), now: Self.now())
        #expect(selection.unreadable == 1 && selection.jobs.count == 1)
        // Just put in place: it may be a filing between its two renames.
        #expect(selection.loneStatuses.isEmpty)
        _ = retention.remove(selection)
        #expect(spool.names("done") == ["garbled.status.json", "garbled.url"])

        let later = try retention.select(Config.History(keep: .seconds(60)), now: Self.now() + HistoryRetention.loneStatusGrace)
        #expect(later.loneStatuses.map(\.status) == ["half.status.json"])
        _ = retention.remove(later)
        #expect(spool.names("failed") == [])
        #expect(spool.names("done") == ["garbled.status.json", "garbled.url"])
    }

    @Test("two removers of one selection: each record removed once, counted once, ENOENT no error")
    func concurrentRemovers() throws {
        let spool = try HistorySpool()
        for index in 0..<40 { try spool.put("r\(index).url", in: index % 2 == 0 ? "done" : "failed", age: 3600) }
        let first = HistoryRetention(spoolRoot: spool.root)
        let second = HistoryRetention(spoolRoot: spool.root)
        let rule = Config.History(keep: .seconds(10))
        let a = try first.select(rule, now: Self.now())
        let b = try second.select(rule, now: Self.now())
        let removedByB = Locked(HistoryRetention.Removal())
        let thread = try WorkerThread.start("test remover") { removedByB.withLock { $0 = second.remove(b) } }
        let removedByA = first.remove(a)
        pthread_join(thread, nil)
        let byB = removedByB.withLock { $0 }
        #expect(removedByA.error == nil && byB.error == nil)
        #expect(removedByA.removed + byB.removed == 40)
        #expect(spool.names("done").isEmpty && spool.names("failed").isEmpty)
    }

    @Test("purge: --dry-run counts and removes nothing; no rule is refused; the config's history: applies")
    func purge() throws {
        let spool = try HistorySpool()
        for index in 0..<5 { try spool.put("p\(index).url", in: "done", age: 7200 + Int64(index)) }
        try spool.put("new.url", in: "failed", age: 0)

        let dry = try HistoryPurge.run(config: spool.config, rule: HistoryPurge.rule(olderThan: .seconds(3600), keepJobs: nil,
                                                                                    config: spool.config), dryRun: true)
        #expect(dry.selected == 5 && dry.removed == 0 && dry.kept == 1)
        #expect(spool.names("done").count == 10)
        #expect(dry.text() == "would remove 5 finished jobs from done/ and failed/; 1 kept")

        #expect(HistoryPurge.rule(olderThan: nil, keepJobs: nil, config: spool.config) == nil)
        #expect(throws: HistoryPurge.Refusal.self) { try HistoryPurge.run(config: spool.config, rule: nil, dryRun: false) }
        #expect(spool.names("done").count == 10)

        var configured = spool.config
        configured.history = Config.History(maxJobs: 2)
        let report = try HistoryPurge.run(config: configured, rule: HistoryPurge.rule(olderThan: nil, keepJobs: nil,
                                                                                      config: configured), dryRun: false)
        #expect(report.removed == 4 && report.kept == 2)
        #expect(spool.names("done") == ["p0.status.json", "p0.url"])
        #expect(spool.names("failed") == ["new.status.json", "new.url"])
    }

    @Test("history: values are checked and located (file:line:col)",
          arguments: [("history:\n  keep: 30\n", 2, 9), ("history:\n  keep: -3d\n", 2, 9), ("history:\n  keep: 1h30m\n", 2, 9),
                      ("history:\n  max_jobs: -1\n", 2, 13), ("history:\n  max_jobs: many\n", 2, 13),
                      ("history:\n  kept: 3d\n", 2, 3), ("history: 30d\n", 1, 10)])
    func badValues(yaml: String, line: Int, column: Int) {
        do {
            _ = try ConfigLoader.parse(yaml, file: "c.yaml")
            Issue.record("accepted: \(yaml)")
        } catch {
            #expect(error.file == "c.yaml" && error.line == line && error.column == column, "\(error)")
            #expect(error.description.hasPrefix("c.yaml:\(line):\(column): history"), "\(error)")
        }
    }

    @Test("history: durations s, m, h, d and max_jobs are read")
    func goodValues() throws {
        let config = try ConfigLoader.parse("history:\n  keep: 90m\n  max_jobs: 100000\n", file: "c.yaml")
        #expect(config.history == Config.History(keep: .seconds(5400), maxJobs: 100_000))
        #expect(try ConfigLoader.parse("history: { keep: 30d }\n", file: "c.yaml").history?.keep == .seconds(30 * 86_400))
        #expect(try ConfigLoader.parse("spool: /s\n", file: "c.yaml").history == nil)
    }

    @Test("the finished time read quickly equals the record's own")
    func quickFinished() {
        var record = StatusRecord(job: "q.url", state: .done, className: "default", priority: 0, agent: "a", submitted: "")
        record.finished = "2026-11-21T22:03:10Z"
        #expect(HistoryRetention.quickFinished(record.encoded()) == Timestamp.parse("2026-11-21T22:03:10Z"))
        #expect(HistoryRetention.rfc3339Seconds(ArraySlice("1970-01-01T00:00:00Z".utf8)) == 0)
        #expect(HistoryRetention.rfc3339Seconds(ArraySlice("2000-02-29T12:00:00Z".utf8)) == Timestamp.parse("2000-02-29T12:00:00Z"))
    }
}
