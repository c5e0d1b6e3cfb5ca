@testable import DropFetch
import Foundation
import Testing

@Suite("Spool moves")
struct SpoolTests {
    /// Names cut by bytes where that equals cutting by Characters, else as `dropLast` cuts them:
    /// a Unicode "prepend" mark before `.url` joins the dot's Character (U+0600, GB9b).
    @Test("record, state and status names: the name itself, and the same names as Character cuts give for a prepend mark")
    func recordNames() {
        #expect(Spool.candidateName("x.url", number: 0) == "x.url")
        #expect(Spool.candidateName("x.url", number: 2) == "x.2.url")
        #expect(Spool.candidateName("x.URL", number: 0) == "x.url")
        #expect(Spool.stateName(forJob: "x.url") == "x.state.json")
        #expect(Spool.statusName(forJob: "é.url") == "é.status.json")
        let prepended = "a\u{0600}.url"
        #expect(Spool.candidateName(prepended, number: 0) == String(prepended.dropLast(4)) + ".url")
        #expect(Spool.stateName(forJob: prepended) == String(prepended.dropLast(4)) + ".state.json")
        #expect(Spool.statusName(forJob: prepended) == String(prepended.dropLast(4)) + ".status.json")
        #expect(FileSystem.join("/a/é", "b") == "/a/é/b" && FileSystem.join("", "b") == "/b")
    }

    private func makeSpool(agent: String = "a1") throws -> (Spool, String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)").path
        let spool = Spool(root: root, agentID: agent, durable: true)
        try spool.open()
        return (spool, root)
    }

    @Test("open creates every folder and holds the work lock; a second agent with the same id is refused")
    func openAndLock() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for folder in ["inbox", "hold", "done", "failed", "work/a1"] {
            #expect(FileSystem.isDirectory(root + "/" + folder))
        }
        _ = spool
        let twin = Spool(root: root, agentID: "a1", durable: true)
        #expect(throws: SpoolError.self) { try twin.open() }
    }

    @Test("scan skips dot-files and non-.url names and finds subfolders; claim moves without replacing")
    func scanAndClaim() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/inbox/urgent", withIntermediateDirectories: true)
        for name in ["x.url", ".hidden.url", "notes.txt", "urgent/x.url", ".x.url.tmp"] {
            try "http://h/x\n".write(toFile: root + "/inbox/" + name, atomically: false, encoding: .utf8)
        }
        let entries = spool.scanInbox().sorted { $0.relativePath < $1.relativePath }
        #expect(entries.map(\.relativePath) == ["urgent/x.url", "x.url"])
        #expect(entries.map(\.folder) == ["urgent", ""])
        let first = try spool.claim(entries[0])
        let second = try spool.claim(entries[1])
        #expect(first == "x.url")
        #expect(second == "x.1.url")
        #expect(try spool.claim(entries[1]) == nil)
        #expect(Set(spool.ownJobs()) == ["x.url", "x.1.url"])
    }

    @Test("filing never overwrites a record: x.url, then x.1.url, each with its status file")
    func fileNeverOverwrites() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for _ in 0..<2 {
            try "http://h/x\n".write(toFile: root + "/inbox/x.url", atomically: false, encoding: .utf8)
            let name = try #require(try spool.claim(.init(relativePath: "x.url", modified: 0)))
            let record = StatusRecord(job: "x.url", state: .done, className: "default", priority: 0, agent: "a1",
                                      submitted: Timestamp.now())
            try spool.file(path: root + "/work/a1/" + name, as: .done, status: record, stagingIn: root + "/work/a1")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: root + "/done").sorted()
        #expect(names == ["x.1.status.json", "x.1.url", "x.status.json", "x.url"])
        #expect(spool.ownJobs().isEmpty)
    }

    @Test("a status written but the job not yet moved is completed on recovery, not redone")
    func unfinishedFilingIsCompleted() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try "http://h/x\n".write(toFile: root + "/work/a1/y.url", atomically: false, encoding: .utf8)
        var record = StatusRecord(job: "y.url", state: .done, className: "default", priority: 0, agent: "a1",
                                  submitted: Timestamp.now())
        record.finished = Timestamp.now()
        try Data(record.encoded()).write(to: URL(fileURLWithPath: root + "/done/y.status.json"))
        let found = try #require(spool.unfinishedFiling(of: "y.url", job: "y.url"))
        #expect(found.outcome == .done)
        try spool.completeFiling("y.url", to: found.jobPath)
        #expect(FileManager.default.fileExists(atPath: root + "/done/y.url"))
        #expect(spool.ownJobs().isEmpty)
    }

    /// Agent `dead`'s work folder with job `z.url`, its lock free and its lease naming a process of
    /// this host that is gone (no such pid): adopted at once.
    static func plantDeadAgent(in root: String) throws {
        try FileManager.default.createDirectory(atPath: root + "/work/dead", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: root + "/work/dead/.lock", contents: nil)
        try "http://h/x\n".write(toFile: root + "/work/dead/z.url", atomically: false, encoding: .utf8)
        var lease = WorkLease.Record.ofThisProcess(epoch: 1, lease: 10_000)
        lease.pid = Int32.max - 1
        _ = FileManager.default.createFile(atPath: root + "/work/dead/.lease", contents: Data(lease.encoded()))
    }

    @Test("a dead agent's work folder is adopted; a live one's is left alone")
    func adoptsDeadAgents() throws {
        let (spool, root) = try makeSpool(agent: "live")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.plantDeadAgent(in: root)
        let other = Spool(root: root, agentID: "busy", durable: true)
        try other.open()
        try "http://h/x\n".write(toFile: root + "/work/busy/b.url", atomically: false, encoding: .utf8)

        #expect(spool.adoptOrphans() == ["z.url"])
        #expect(FileManager.default.fileExists(atPath: root + "/work/live/z.url"))
        #expect(FileManager.default.fileExists(atPath: root + "/work/busy/b.url"))
    }

    @Test("an agent whose lease is lapsed judges and adopts no folder until it holds the lease again")
    func adoptsOnlyWithTheLease() throws {
        let (spool, root) = try makeSpool(agent: "idle")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Self.plantDeadAgent(in: root)
        // An empty folder is not worth the lease: it is not asked for.
        try FileManager.default.createDirectory(atPath: root + "/work/empty", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: root + "/work/empty/.lock", contents: nil)

        let watch = LeaseWatch(ownLease: .zero)
        var asked: [Bool] = []
        let refused = spool.adoptOrphans(watch: watch, now: Fence.now() / 1_000_000) {
            asked.append(false)
            return false
        }
        #expect(asked.count == 1, "the lease was asked for \(asked.count) times for one folder with jobs")
        #expect(refused.awaitsLease)
        #expect(refused.adopted.isEmpty)
        #expect(FileManager.default.fileExists(atPath: root + "/work/dead/z.url"))
        let adopted = spool.adoptOrphans(watch: watch, now: Fence.now() / 1_000_000) { true }
        #expect(!adopted.awaitsLease)
        #expect(adopted.adopted == ["z.url"])
        #expect(FileManager.default.fileExists(atPath: root + "/work/idle/z.url"))
    }

    @Test("stale temporaries are judged by the clock the agent gives: a fresh one stays, the same one two days on is removed")
    func staleTemporariesByTheGivenClock() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let temp = root + "/inbox/.x.url.tmp"
        try "http://h/x\n".write(toFile: temp, atomically: false, encoding: .utf8)
        let now = Int64(time(nil))
        #expect(spool.removeStaleTemporaries(now: now) == 0)
        #expect(FileManager.default.fileExists(atPath: temp))
        #expect(spool.removeStaleTemporaries(now: now + 2 * 86_400) == 1)
        #expect(!FileManager.default.fileExists(atPath: temp))
    }

    @Test("status timestamps are UTC RFC 3339 and round-trip")
    func timestamps() {
        #expect(Timestamp.format(seconds: 0) == "1970-01-01T00:00:00Z")
        #expect(Timestamp.format(seconds: 1_795_298_400) == "2026-11-21T22:00:00Z")
        #expect(Timestamp.parse("2026-11-21T22:00:00Z") == 1_795_298_400)
    }

    @Test("a staged status is filed only with the job file it was staged for: one claimed since under the name stays")
    func stagedStatusKeepsToItsJobFile() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let work = root + "/work/a1"
        try "http://h/a\n".write(toFile: work + "/x.url", atomically: false, encoding: .utf8)
        let record = StatusRecord(job: "x.url", state: .done, className: "default", priority: 0, agent: "a1",
                                  submitted: Timestamp.now())
        let staged = try spool.stageStatus(record, as: .done, for: work + "/x.url", stagingIn: work)
        // Held away while its status was being synced, and another x.url claimed under the same name.
        try FileManager.default.moveItem(atPath: work + "/x.url", toPath: root + "/hold/x.url")
        try "http://h/b\n".write(toFile: work + "/x.url", atomically: false, encoding: .utf8)
        #expect(throws: SystemError.self) { try spool.fileStaged(staged, from: work + "/x.url") }
        spool.discard(staged)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/done").isEmpty)
        #expect(try String(contentsOfFile: work + "/x.url", encoding: .utf8) == "http://h/b\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: work).filter { $0.hasSuffix(".tmp") }.isEmpty)
    }
}
