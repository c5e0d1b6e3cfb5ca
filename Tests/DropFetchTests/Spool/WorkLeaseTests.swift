@testable import DropFetch
import Foundation
import Glibc
import Logging
import Testing

/// The lease of an agent that holds no job (issue 34, P5; DESIGN.md §10 Fencing): offered to
/// lapse, the lease thread writes one last record saying so (`idle=1`) and then nothing, so that
/// an idle daemon syncs no file every quarter lease; asked for again, it is renewed before the
/// agent may act. `status` tells such an agent from a fenced one by that record.
@Suite("WorkLease: an idle agent's lease lapses, and is taken again before it acts")
struct WorkLeaseTests {
    /// A work folder of its own, removed by the caller.
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/dropfetch-lease-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func record(in folder: String) -> WorkLease.Record? {
        FileManager.default.contents(atPath: folder + "/" + WorkLease.fileName).flatMap { WorkLease.Record.parse(Array($0)) }
    }

    /// Whether `descriptor` turns readable within `milliseconds` (poll(2)).
    static func readable(_ descriptor: Int32, within milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) == 1
    }

    @Test("offered to lapse, the lease writes one idle record after its grace and then nothing; asked for, it is renewed before the agent acts")
    func lapsesAndWakes() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let lease = try WorkLease(folder: folder, lease: .seconds(1), logger: Logger(label: "test"))
        let taken = try #require(Self.record(in: folder))
        #expect(!taken.idle && taken.epoch == 1)
        #expect(lease.fence.permits())

        let offered = ContinuousClock.now
        lease.mayLapse()
        #expect(try waitUntil(timeout: .seconds(5), interval: .milliseconds(5)) { Self.record(in: folder)?.idle == true })
        let waited = ContinuousClock.now - offered
        #expect(waited >= .milliseconds(950) && waited < .seconds(5), "the lease lapsed \(waited) after it was offered")
        let lapsed = try #require(Self.record(in: folder))
        #expect(lapsed.epoch == taken.epoch && lapsed.renewal > taken.renewal)
        #expect(!lease.fence.permits())
        #expect(!lease.fence.isBroken, "a lapse is not a fence: \(lease.fence.brokenBecause ?? "")")
        #expect(lease.fence.millisecondsLeft() == nil)

        // Four quarter-lease renewal times go by: the file is not written again.
        let rewritten = try waitUntil(timeout: .milliseconds(1_200)) { Self.record(in: folder) != lapsed }
        #expect(!rewritten, "a lapsed lease was written again: \(String(describing: Self.record(in: folder)))")
        #expect(!lease.fence.isBroken)

        // The loop asks for the lease; it may act once the renewal went through, which wakes it.
        #expect(!lease.readyToAct())
        #expect(Self.readable(lease.descriptor, within: 5_000), "the renewal after a lapse did not wake the loop")
        lease.drain()
        #expect(lease.readyToAct())
        #expect(lease.fence.permits())
        let left = try #require(lease.fence.millisecondsLeft())
        #expect(left > 0 && left <= 1_000, "\(left) ms left of a 1 s lease")
        let renewed = try #require(Self.record(in: folder))
        #expect(!renewed.idle && renewed.epoch == taken.epoch && renewed.renewal > lapsed.renewal, "\(renewed)")
        // Renewed every quarter lease again.
        #expect(try waitUntil(timeout: .seconds(5)) { (Self.record(in: folder)?.renewal ?? 0) > renewed.renewal })
        #expect(lease.fence.permits())
    }

    @Test("a lapse taken back within its grace is never written, and the renewals go on")
    func lapseTakenBackWithinGrace() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let lease = try WorkLease(folder: folder, lease: .seconds(1), logger: Logger(label: "test"))
        lease.mayLapse()
        #expect(lease.fence.phase == .lapsing)
        #expect(lease.readyToAct(), "a lapse on offer is taken back at once")
        #expect(lease.fence.phase == .active)
        let start = try #require(Self.record(in: folder)).renewal
        var sawIdle = false
        // Past the grace (1 s) and several renewals.
        _ = try waitUntil(timeout: .milliseconds(1_600)) {
            if Self.record(in: folder)?.idle == true { sawIdle = true }
            return false
        }
        #expect(!sawIdle)
        // Renewed every quarter lease all along (a slow disk spaces them by its fdatasync too).
        #expect(try waitUntil(timeout: .seconds(5)) { (Self.record(in: folder)?.renewal ?? 0) >= start + 3 },
                "renewals stopped: \(start) → \(String(describing: Self.record(in: folder)?.renewal))")
        #expect(lease.fence.permits())
    }

    @Test("status: a late lease that says idle, its lock held, is a running agent; the same lease not idle is a fenced one")
    func idleAgentIsNotFenced() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let lock = try FileDescriptor.open(folder + "/.lock", flags: O_RDWR | O_CREAT, mode: 0o644)
        #expect(flock(lock.rawValue, LOCK_EX) == 0)
        var record = WorkLease.Record(epoch: 3, renewal: 9, leaseMilliseconds: 2_000, host: "elsewhere",
                                      boot: "00000000-0000-4000-8000-000000000000", pidNamespace: "pid:[1]", pid: 7, started: 1)
        let path = folder + "/" + WorkLease.fileName
        func write(idle: Bool) throws {
            record.idle = idle
            try Data(record.encoded()).write(to: URL(fileURLWithPath: path))
            // Written a minute ago: well past its 2 s and the 2 s margin.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -60)], ofItemAtPath: path)
        }
        let now = AgentClock().wallNanoseconds()
        try write(idle: true)
        #expect(AgentLiveness.state(workFolder: folder, now: now) == .running)
        try write(idle: false)
        #expect(AgentLiveness.state(workFolder: folder, now: now) == .fenced)
        // Its lock let go (the agent on the other host stopped): gone, idle or not.
        #expect(flock(lock.rawValue, LOCK_UN) == 0)
        #expect(AgentLiveness.state(workFolder: folder, now: now) == .gone)
        try write(idle: true)
        #expect(AgentLiveness.state(workFolder: folder, now: now) == .gone)
    }
}
