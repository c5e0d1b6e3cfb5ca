@testable import DropFetch
import Foundation
import Glibc
import Testing

/// How an agent judges another agent's lease before adopting its work folder (DESIGN.md §10
/// "Fencing", `LeaseWatch`): the lease's bytes must stay the same for the lease and a margin of
/// the watcher's own clock, counted from when it first saw them; an owner of this host whose
/// process is gone is adopted at once. `now` is given explicitly (CLOCK_BOOTTIME milliseconds).
@Suite("LeaseWatch: another agent's work folder is adopted only once its lease ran out")
struct LeaseWatchTests {
    /// A work folder `work/<agent>` in a temp spool, its lease written by the test.
    final class Folder {
        let root: String
        let path: String

        init(agent: String = "other") throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("lease-\(UUID().uuidString)").path
            path = root + "/work/" + agent
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        func writeLease(_ record: WorkLease.Record) throws {
            try writeLease(record.encoded())
        }

        func writeLease(_ bytes: [UInt8]) throws {
            try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + WorkLease.fileName))
        }
    }

    /// A lease written by an agent on another host (another boot id): never provably gone.
    static func elsewhere(lease: Int64 = 2_000, renewal: UInt64 = 1) -> WorkLease.Record {
        WorkLease.Record(epoch: 4, renewal: renewal, leaseMilliseconds: lease, host: "elsewhere", boot: "another-boot",
                         pidNamespace: "pid:[1]", pid: 77, started: 5)
    }

    @Test("margin is max(2 s, lease/4)", arguments: [
        (Int64(1_000), Int64(2_000)), (2_000, 2_000), (8_000, 2_000), (8_004, 2_001), (10_000, 2_500), (40_000, 10_000),
    ])
    func margin(_ lease: Int64, _ expected: Int64) {
        #expect(LeaseWatch.margin(lease) == expected)
    }

    @Test("first look waits lease + margin; unchanged bytes are adopted at that time, without trusting the data, not 1 ms before")
    func unchangedLeaseIsAdoptedWhenDue() throws {
        let folder = try Folder()
        try folder.writeLease(Self.elsewhere(lease: 2_000))
        let watch = LeaseWatch(ownLease: .seconds(2))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 14_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 12_000) == .wait(until: 14_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 13_999) == .wait(until: 14_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 14_000) == .adopt(trustsData: false))
    }

    @Test("bytes that changed (a renewal) restart the wait from when they were seen")
    func changedLeaseRestartsTheWait() throws {
        let folder = try Folder()
        try folder.writeLease(Self.elsewhere(renewal: 1))
        let watch = LeaseWatch(ownLease: .seconds(2))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 14_000))
        try folder.writeLease(Self.elsewhere(renewal: 2))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 13_000) == .wait(until: 17_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 14_000) == .wait(until: 17_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 16_999) == .wait(until: 17_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 17_000) == .adopt(trustsData: false))
    }

    @Test("an owner seen alive (its lock held) is looked at afresh when its lock is next free")
    func sawAliveRestartsTheWait() throws {
        let folder = try Folder()
        try folder.writeLease(Self.elsewhere())
        let watch = LeaseWatch(ownLease: .seconds(2))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 14_000))
        watch.sawAlive("other")
        #expect(watch.verdict(on: "other", folder: folder.path, now: 14_000) == .wait(until: 18_000))
    }

    @Test("each agent's lease is watched on its own")
    func agentsAreWatchedApart() throws {
        let first = try Folder(agent: "one")
        let second = try Folder(agent: "two")
        try first.writeLease(Self.elsewhere())
        try second.writeLease(Self.elsewhere())
        let watch = LeaseWatch(ownLease: .seconds(2))
        #expect(watch.verdict(on: "one", folder: first.path, now: 10_000) == .wait(until: 14_000))
        #expect(watch.verdict(on: "two", folder: second.path, now: 12_000) == .wait(until: 16_000))
        #expect(watch.verdict(on: "one", folder: first.path, now: 14_000) == .adopt(trustsData: false))
        #expect(watch.verdict(on: "two", folder: second.path, now: 14_000) == .wait(until: 16_000))
    }

    @Test("a lease of this host naming a pid that is gone is adopted at once, its data trusted")
    func goneProcessOfThisHostIsAdoptedAtOnce() throws {
        try #require(BootID.current != nil && ProcessIdentity.pidNamespace() != nil, "/proc tells no boot id or pid namespace")
        let folder = try Folder()
        var record = WorkLease.Record.ofThisProcess(epoch: 1, lease: 10_000)
        record.pid = Int32.max - 1
        try folder.writeLease(record)
        let watch = LeaseWatch(ownLease: .seconds(10))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .adopt(trustsData: true))
    }

    @Test("a lease of this host naming a pid now held by a process started at another time is adopted at once")
    func reusedPidIsGone() throws {
        try #require(BootID.current != nil && ProcessIdentity.pidNamespace() != nil, "/proc tells no boot id or pid namespace")
        let folder = try Folder()
        var record = WorkLease.Record.ofThisProcess(epoch: 1, lease: 10_000)
        record.started &+= 1
        try folder.writeLease(record)
        let watch = LeaseWatch(ownLease: .seconds(10))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .adopt(trustsData: true))
    }

    @Test("a lease naming this test process (alive) waits lease + margin, and is then adopted without trusting its data")
    func liveProcessOfThisHostWaits() throws {
        let folder = try Folder()
        try folder.writeLease(WorkLease.Record.ofThisProcess(epoch: 1, lease: 10_000))
        let watch = LeaseWatch(ownLease: .seconds(10))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 22_500))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 22_499) == .wait(until: 22_500))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 22_500) == .adopt(trustsData: false))
    }

    @Test("a gone pid named by a lease of another boot or another pid namespace is not taken for gone")
    func gonePidOfAnotherHostWaits() throws {
        let folder = try Folder()
        var record = WorkLease.Record.ofThisProcess(epoch: 1, lease: 2_000)
        record.pid = Int32.max - 1
        record.boot = "another-boot"
        try folder.writeLease(record)
        let watch = LeaseWatch(ownLease: .seconds(2))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 14_000))
        record = WorkLease.Record.ofThisProcess(epoch: 1, lease: 2_000)
        record.pid = Int32.max - 1
        record.pidNamespace = "pid:[1]"
        try folder.writeLease(record)
        #expect(watch.verdict(on: "other", folder: folder.path, now: 20_000) == .wait(until: 24_000))
        // A lease whose boot is empty (the owner's /proc did not tell) proves nothing either.
        record = WorkLease.Record.ofThisProcess(epoch: 1, lease: 2_000)
        record.pid = Int32.max - 1
        record.boot = ""
        try folder.writeLease(record)
        #expect(watch.verdict(on: "other", folder: folder.path, now: 30_000) == .wait(until: 34_000))
    }

    @Test("the owner's longer lease is honoured, with its own margin")
    func longerOwnerLeaseIsHonoured() throws {
        let folder = try Folder()
        try folder.writeLease(Self.elsewhere(lease: 20_000))
        let watch = LeaseWatch(ownLease: .seconds(2))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 35_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 34_999) == .wait(until: 35_000))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 35_000) == .adopt(trustsData: false))
    }

    @Test("an owner's shorter lease is not trusted below the watcher's own")
    func shorterOwnerLeaseIsNotTrusted() throws {
        let folder = try Folder()
        try folder.writeLease(Self.elsewhere(lease: 1_000))
        let watch = LeaseWatch(ownLease: .seconds(10))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 22_500))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 22_499) == .wait(until: 22_500))
    }

    @Test("an owner's lease is trusted up to an hour: a peer cannot keep its folder from adoption forever")
    func ownerLeaseIsCapped() throws {
        let folder = try Folder()
        try folder.writeLease(Self.elsewhere(lease: Int64.max / 2))
        let watch = LeaseWatch(ownLease: .seconds(2))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 10_000 + 3_600_000 + 900_000))
    }

    @Test("a folder with no lease file, or garbage in it, waits the watcher's own lease + margin")
    func missingOrGarbageLeaseWaitsOwnLease() throws {
        let folder = try Folder()
        let watch = LeaseWatch(ownLease: .seconds(10))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 10_000) == .wait(until: 22_500))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 22_500) == .adopt(trustsData: false))
        try folder.writeLease(Array("not a lease at all\n".utf8))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 30_000) == .wait(until: 42_500))
        #expect(watch.verdict(on: "other", folder: folder.path, now: 42_500) == .adopt(trustsData: false))
    }

    // MARK: - Adoption by the spool

    @Test("adoptOrphans leaves a free folder of a live owner elsewhere until its lease ran out, then adopts it distrusted")
    func spoolAdoptsWhenTheLeaseRanOut() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let spool = Spool(root: root, agentID: "live", durable: false)
        try spool.open()
        try FileManager.default.createDirectory(atPath: root + "/work/far", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: root + "/work/far/.lock", contents: nil)
        try "http://h/x\n".write(toFile: root + "/work/far/z.url", atomically: false, encoding: .utf8)
        try Data(Self.elsewhere(lease: 2_000).encoded()).write(to: URL(fileURLWithPath: root + "/work/far/.lease"))
        // A live agent of this spool holds its lock: never adopted, nothing to look at later.
        let busy = Spool(root: root, agentID: "busy", durable: false)
        try busy.open()
        try "http://h/b\n".write(toFile: root + "/work/busy/b.url", atomically: false, encoding: .utf8)

        let watch = LeaseWatch(ownLease: .seconds(2))
        let first = spool.adoptOrphans(watch: watch, now: 50_000)
        #expect(first.adopted.isEmpty)
        #expect(first.nextLook == 54_000)
        #expect(FileManager.default.fileExists(atPath: root + "/work/far/z.url"))
        let early = spool.adoptOrphans(watch: watch, now: 53_999)
        #expect(early.adopted.isEmpty && early.nextLook == 54_000)

        let due = spool.adoptOrphans(watch: watch, now: 54_000)
        #expect(due.adopted == ["z.url"])
        #expect(due.distrusted == ["z.url"])
        #expect(due.nextLook == nil)
        #expect(FileManager.default.fileExists(atPath: root + "/work/live/z.url"))
        #expect(FileManager.default.fileExists(atPath: root + "/work/busy/b.url"))
        withExtendedLifetime(busy) {}
    }
}
