import Foundation
import Testing
@testable import DropFetch

/// DESIGN.md §10: `status` and the status page show the newest finished jobs from the filing
/// journals, as the full scan would, and fall back to the scan whenever a journal cannot be trusted;
/// nothing shown is not in done/ or failed/.
@Suite("Recent view from the filing journals")
struct RecentFilingsTests {
    /// 30 jobs filed one after another, done and failed, one name twice (x.url, x.1.url).
    static func filedSpool() throws -> HistorySpool {
        let spool = try HistorySpool()
        for index in 0..<30 { try spool.file(index == 12 ? "twice.url" : "job\(index).url", index % 3 == 0 ? .failed : .done) }
        try spool.file("twice.url", .done)
        return spool
    }

    @Test("the journal's view equals the full scan, and is what the journal says")
    func equalsScan() throws {
        let spool = try Self.filedSpool()
        let journaled = try #require(RecentFilings.read(root: spool.root, done: spool.root + "/done",
                                                        failed: spool.root + "/failed", limit: 20))
        let (shown, scanned) = spool.recentJobs()
        #expect(shown.count == 20)
        #expect(shown == scanned)
        #expect(journaled.map(\.job) == shown)
        #expect(shown.first == "twice.url" && shown.dropFirst().first == "job29.url")
    }

    @Test("records removed, retried or put by hand: the view still equals the scan")
    func removedRecords() throws {
        let spool = try Self.filedSpool()
        // Retention and a person moving a failed record away.
        try FileManager.default.removeItem(atPath: spool.root + "/done/job28.url")
        try FileManager.default.removeItem(atPath: spool.root + "/done/job28.status.json")
        try FileManager.default.moveItem(atPath: spool.root + "/failed/job27.url", toPath: spool.root + "/inbox/job27.url")
        try FileManager.default.removeItem(atPath: spool.root + "/failed/job27.status.json")
        let (shown, scanned) = spool.recentJobs()
        #expect(shown == scanned)
        #expect(!shown.contains("job28.url") && !shown.contains("job27.url"))
    }

    @Test("fewer records than asked for, or no journal: the scan answers")
    func fallbackWhenShort() throws {
        let spool = try HistorySpool()
        try spool.put("byhand.url", in: "done", age: 5)
        try spool.file("one.url", .done)
        #expect(RecentFilings.read(root: spool.root, done: spool.root + "/done", failed: spool.root + "/failed", limit: 20) == nil)
        let (shown, scanned) = spool.recentJobs()
        #expect(shown == ["one.url", "byhand.url"] && shown == scanned)
    }

    /// What a group member might leave in a journal's place, and whether the reader may still use it.
    static let forgeries: [(name: String, bytes: [UInt8])] = [
        ("a garbled line", Array("dropfetch-filings 1\n123 d job1.url\nnot a line at all\n".utf8)),
        ("an older version", Array("dropfetch-filings 0\n123 d job1.url\n".utf8)),
        ("no header", Array("123 d job1.url\n".utf8)),
        ("a name with a slash", Array("dropfetch-filings 1\n9999999999999999999 d ../../etc/passwd.url\n".utf8)),
        ("a bad escape", Array("dropfetch-filings 1\n1 d job%G1.url\n".utf8)),
        ("an escaped NUL", Array("dropfetch-filings 1\n1 d job%00.url\n".utf8)),
        ("a number too long", Array("dropfetch-filings 1\n99999999999999999999 d job1.url\n".utf8)),
        ("binary", (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }),
        ("too large", Array("dropfetch-filings 1\n".utf8) + [UInt8](repeating: 0x41, count: RecentFilings.maxJournalSize)),
    ]

    @Test("a forged, torn-beyond-repair or older journal degrades to the scan", arguments: forgeries.map(\.name))
    func forgedJournal(name: String) throws {
        let spool = try Self.filedSpool()
        let bytes = try #require(Self.forgeries.first { $0.name == name }).bytes
        try Data(bytes).write(to: URL(fileURLWithPath: spool.root + "/" + FilingJournal.prefix + "peer"))
        #expect(RecentFilings.read(root: spool.root, done: spool.root + "/done", failed: spool.root + "/failed", limit: 20) == nil)
        let (shown, scanned) = spool.recentJobs()
        #expect(shown == scanned)
    }

    @Test("an agent's journal of another version (or a peer's garbage) is begun again at the next open")
    func writerBeginsAgain() throws {
        let spool = try HistorySpool()
        try Data("dropfetch-filings 0\n1 d old.url\n".utf8).write(to: URL(fileURLWithPath: spool.journalPath))
        for index in 0..<20 { try spool.file("n\(index).url", .done) }
        let text = try String(contentsOfFile: spool.journalPath, encoding: .utf8)
        #expect(text.hasPrefix(FilingJournal.header) && !text.contains("old.url"))
        let journaled = try #require(RecentFilings.read(root: spool.root, done: spool.root + "/done",
                                                        failed: spool.root + "/failed", limit: 20))
        #expect(journaled.map(\.job) == spool.recentJobs().scanned)
    }

    @Test("a torn last line is left out; lines naming records not in done/ or failed/ are never shown")
    func tornAndGhostLines() throws {
        let spool = try Self.filedSpool()
        let far = Int64.max / 2
        let forged = "\(far) d ghost.url\n\(far) f job3.url\n\(far) d job0.url\n\(far) d twice"
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: spool.journalPath))
        handle.seekToEndOfFile()
        handle.write(Data(forged.utf8))
        try handle.close()
        let shown = try #require(RecentFilings.read(root: spool.root, done: spool.root + "/done",
                                                    failed: spool.root + "/failed", limit: 20)).map(\.job)
        #expect(!shown.contains("ghost.url"))
        // job0 is in failed/, not done/: the line naming it in done/ shows nothing; job3 (failed/) is there.
        #expect(shown.filter { $0 == "job0.url" }.count <= 1)
        let paths = Set(spool.names("done").map { "done/" + $0 } + spool.names("failed").map { "failed/" + $0 })
        for record in SpoolStatus.read(config: spool.config).recent {
            #expect(paths.contains("done/" + Spool.statusName(forJob: record.job).replacingOccurrences(of: ".status.json", with: ".url"))
                        || paths.contains("failed/" + Spool.statusName(forJob: record.job).replacingOccurrences(of: ".status.json", with: ".url")),
                    "\(record.job) is shown but not in done/ or failed/")
        }
    }

    @Test("a FIFO or a symlink in a journal's place is refused at once")
    func specialFiles() throws {
        let spool = try Self.filedSpool()
        #expect(mkfifo(spool.root + "/" + FilingJournal.prefix + "fifo", 0o644) == 0)
        let started = Date()
        #expect(RecentFilings.read(root: spool.root, done: spool.root + "/done", failed: spool.root + "/failed", limit: 20) == nil)
        #expect(Date().timeIntervalSince(started) < 5, "a FIFO must not block the reader")
        try FileManager.default.removeItem(atPath: spool.root + "/" + FilingJournal.prefix + "fifo")
        try FileManager.default.createSymbolicLink(atPath: spool.root + "/" + FilingJournal.prefix + "link", withDestinationPath: spool.journalPath)
        #expect(RecentFilings.read(root: spool.root, done: spool.root + "/done", failed: spool.root + "/failed", limit: 20) == nil)
        #expect(spool.recentJobs().shown == spool.recentJobs().scanned)
    }

    @Test("names with spaces, percent signs and newlines survive the journal")
    func escapedNames() throws {
        let spool = try HistorySpool()
        let names = ["a b.url", "100%.url", "new\nline.url", "tab\t.url"] + (0..<20).map { "n\($0).url" }
        for name in names { try spool.file(name, .done) }
        let journaled = try #require(RecentFilings.read(root: spool.root, done: spool.root + "/done",
                                                        failed: spool.root + "/failed", limit: 24)).map(\.job)
        #expect(Set(journaled) == Set(names))
    }

    @Test("a journal past its size is rotated: the view reads both generations")
    func rotation() throws {
        let spool = try HistorySpool()
        let padding = String(repeating: "p", count: 180)
        var index = 0
        while (try? FileManager.default.attributesOfItem(atPath: spool.journalPath + ".1")) == nil {
            try spool.file("\(padding)\(index).url", .done)
            index += 1
        }
        // Only a few lines in the new generation: the rest of the view comes from `.1`.
        for _ in 0..<3 { try spool.file("\(padding)\(index).url", .done); index += 1 }
        let (shown, scanned) = spool.recentJobs()
        #expect(shown == scanned && shown.count == 20)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: spool.journalPath + ".1")[.size] as? Int)
        #expect(size <= Int(FilingJournal.rotationSize) + 1024)
    }
}
