@testable import DropFetch
import Foundation
import Glibc
import Testing

/// The fence of DESIGN.md §10 "Fencing" (`Fence`): it holds until its lease ends, a renewal
/// extends it only when it ended in time, and once broken it stays broken with its first cause.
/// Times are CLOCK_BOOTTIME nanoseconds, as `Fence.now()` reads them.
@Suite("Fence: an agent acts on its jobs only while its lease runs")
struct FenceTests {
    static let second: Int64 = 1_000_000_000

    @Test("a fence holds until its end and breaks at the first look after it, with a cause")
    func holdsUntilItsEnd() throws {
        let end = Fence.now() + Self.second / 5
        let fence = Fence(epoch: 3, validUntil: end)
        #expect(fence.permits())
        #expect(fence.brokenBecause == nil)
        #expect(fence.epoch == 3)
        let left = try #require(fence.millisecondsLeft())
        #expect(left > 0 && left <= 200, "\(left) ms left of a 200 ms lease")

        var lastPermitted: Int64 = 0
        let broke = try waitUntil(timeout: .seconds(5), interval: .milliseconds(5)) {
            let asked = Fence.now()
            if fence.permits() {
                lastPermitted = asked
                return false
            }
            return true
        }
        #expect(broke)
        #expect(lastPermitted < end, "it permitted a step asked at \(lastPermitted), after its end \(end)")
        #expect(Fence.now() >= end, "it broke before its end")
        #expect(fence.isBroken)
        #expect(fence.brokenBecause == "the lease on the work folder was not renewed in time")
        #expect(fence.millisecondsLeft() == 0)
    }

    @Test("a fence whose end has passed never permits, even the first time it is asked")
    func endedFenceRefuses() {
        let fence = Fence(epoch: 1, validUntil: Fence.now() - 1)
        #expect(!fence.permits())
        #expect(fence.isBroken)
        #expect(fence.brokenBecause != nil)
    }

    @Test("a renewal that ended in time extends the fence to its start plus the lease, and never shortens it")
    func renewalInTimeExtends() throws {
        let now = Fence.now()
        let fence = Fence(epoch: 1, validUntil: now + 60 * Self.second)
        #expect(fence.renewed(startedAt: now, lease: 120 * Self.second))
        let extended = try #require(fence.millisecondsLeft())
        #expect(extended > 100_000 && extended <= 120_000, "\(extended) ms left after a renewal of 120 s")
        // A renewal that began long ago is counted from when it began: the end stays where it was.
        #expect(fence.renewed(startedAt: now - 200 * Self.second, lease: Self.second))
        let kept = try #require(fence.millisecondsLeft())
        #expect(kept > 100_000, "a renewal counted from an old start shortened the fence to \(kept) ms")
        #expect(fence.permits())
    }

    @Test("a renewal that ended after the fence's end breaks it, and no later renewal mends it")
    func lateRenewalBreaksForGood() {
        let fence = Fence(epoch: 1, validUntil: Fence.now() - Self.second / 100)
        #expect(!fence.renewed(startedAt: Fence.now(), lease: 60 * Self.second))
        #expect(!fence.permits())
        let cause = fence.brokenBecause ?? ""
        #expect(cause.hasPrefix("the lease renewal ended ") && cause.hasSuffix(" ms after the lease ran out"), "\(cause)")
        #expect(!fence.renewed(startedAt: Fence.now(), lease: 60 * Self.second))
        #expect(!fence.permits())
        #expect(fence.millisecondsLeft() == 0)
        #expect(fence.brokenBecause == cause, "a later renewal changed the cause")
    }

    @Test("breakFence is sticky and keeps the first cause; renewals after it fail")
    func breakIsSticky() {
        let fence = Fence(epoch: 2, validUntil: Fence.now() + 60 * Self.second)
        fence.breakFence("the lock is gone")
        fence.breakFence("the lease could not be renewed")
        #expect(!fence.permits())
        #expect(fence.brokenBecause == "the lock is gone")
        #expect(!fence.renewed(startedAt: Fence.now(), lease: 60 * Self.second))
        #expect(fence.brokenBecause == "the lock is gone")
        #expect(fence.millisecondsLeft() == 0)
    }

    @Test("the fence of a step run without an agent always holds and has no end")
    func permanentlyOpen() {
        let fence = Fence.permanentlyOpen()
        #expect(fence.permits())
        #expect(fence.millisecondsLeft() == nil)
        #expect(fence.renewed(startedAt: Fence.now(), lease: Self.second))
        #expect(fence.permits() && fence.millisecondsLeft() == nil)
    }

    @Test("a renewal whose start plus lease overflows does not trap and leaves the fence holding")
    func renewalOverflow() {
        let fence = Fence(epoch: 1, validUntil: Fence.now() + 60 * Self.second)
        #expect(fence.renewed(startedAt: Int64.max - 10, lease: 60 * Self.second))
        #expect(fence.permits())
    }

    // MARK: - A lease that lapses while the agent holds no job

    @Test("a lapse on offer is taken back by the loop before the lease thread takes it: the fence holds throughout")
    func lapseTakenBack() {
        let fence = Fence(epoch: 1, validUntil: Fence.now() + 60 * Self.second)
        #expect(fence.offerLapse())
        #expect(fence.phase == .lapsing)
        #expect(!fence.offerLapse(), "a second offer is not news for the lease thread")
        // While on offer the lease still runs: steps are permitted, but the loop need not wake for its end.
        #expect(fence.permits())
        #expect(fence.millisecondsLeft() == nil)
        let asked = fence.prepareToAct()
        #expect(asked.ready && !asked.wakeRequested)
        #expect(fence.phase == .active)
        #expect(fence.millisecondsLeft() != nil)
        #expect(!fence.lapse(), "the lease thread lapsed a lease the loop had taken back")
        #expect(fence.permits())
    }

    @Test("a dormant fence permits nothing and is not broken, even past its end; it holds again only after a renewal")
    func dormantUntilResumed() throws {
        // Its end passes while dormant: that is no fence.
        let end = Fence.now() + Self.second / 50
        let fence = Fence(epoch: 4, validUntil: end)
        #expect(fence.offerLapse())
        #expect(fence.lapse())
        #expect(try waitUntil(timeout: .seconds(5), interval: .milliseconds(5)) { Fence.now() > end })
        #expect(!fence.permits())
        #expect(!fence.isBroken)
        #expect(fence.brokenBecause == nil)
        #expect(fence.millisecondsLeft() == nil, "the loop would wake for the end of a lapsed lease")
        #expect(!fence.offerLapse())
        // The loop asks for it: the lease thread is told once; no step until the renewal went through.
        let first = fence.prepareToAct()
        #expect(!first.ready && first.wakeRequested)
        let second = fence.prepareToAct()
        #expect(!second.ready && !second.wakeRequested)
        #expect(!fence.permits())
        #expect(fence.resumed(startedAt: Fence.now(), lease: 60 * Self.second))
        #expect(fence.phase == .active)
        #expect(fence.permits())
        let left = try #require(fence.millisecondsLeft())
        #expect(left > 50_000 && left <= 60_000, "\(left) ms left after a renewal of 60 s")
        #expect(fence.prepareToAct().ready)
    }

    @Test("a fence broken while waking stays broken: the renewal that follows does not mend it")
    func brokenWhileWaking() {
        let fence = Fence(epoch: 1, validUntil: Fence.now() + 60 * Self.second)
        #expect(fence.offerLapse() && fence.lapse())
        #expect(fence.prepareToAct().wakeRequested)
        fence.breakFence("the lease could not be renewed: EIO")
        #expect(fence.isBroken)
        #expect(!fence.resumed(startedAt: Fence.now(), lease: 60 * Self.second))
        #expect(!fence.permits())
        #expect(fence.millisecondsLeft() == 0)
        #expect(fence.brokenBecause == "the lease could not be renewed: EIO")
    }

    // MARK: - The lease file's line

    static func record() -> WorkLease.Record {
        WorkLease.Record(epoch: 7, renewal: 41, leaseMilliseconds: 2_500, host: "host-b.example", boot: "2b1c-boot",
                         pidNamespace: "pid:[4026531836]", pid: 4_321, started: 987_654)
    }

    @Test("a lease record is one line that parses back to the same record")
    func recordRoundTrip() throws {
        let record = Self.record()
        let bytes = record.encoded()
        #expect(String(decoding: bytes, as: UTF8.self)
            == "dropfetch-lease 1 epoch=7 renewal=41 lease_ms=2500 host=host-b.example boot=2b1c-boot pidns=pid:[4026531836] pid=4321 started=987654 idle=0\n")
        #expect(WorkLease.Record.parse(bytes) == record)
        // An idle record is as long as an active one: each overwrites the other in place.
        var idle = record
        idle.idle = true
        #expect(idle.encoded().count == bytes.count)
        #expect(WorkLease.Record.parse(idle.encoded())?.idle == true)
        // A record of an agent from before `idle` existed reads as active.
        #expect(WorkLease.Record.parse(Array("dropfetch-lease 1 epoch=7 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1 started=1\n".utf8))?.idle == false)
        // Whatever follows the first line is not read.
        #expect(WorkLease.Record.parse(bytes + Array("garbage on a second line\n".utf8)) == record)
        let own = WorkLease.Record.ofThisProcess(epoch: 1, lease: 10_000)
        #expect(own.pid == getpid())
        #expect(own.started > 0, "this process's start time is read from /proc")
        #expect(WorkLease.Record.parse(own.encoded()) == own)
    }

    @Test("a lease file that is not a lease record parses to nothing", arguments: [
        "",
        "\n",
        "dropfetch-lease\n",
        "dropfetch-lease 2 epoch=7 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1 started=1\n",
        "some-lease 1 epoch=7 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1 started=1\n",
        "dropfetch-lease 1 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1 started=1\n",
        "dropfetch-lease 1 epoch=seven renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1 started=1\n",
        "dropfetch-lease 1 epoch=-1 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1 started=1\n",
        "dropfetch-lease 1 epoch=7 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=99999999999 started=1\n",
        "dropfetch-lease 1 epoch=7 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1\n",
        "dropfetch-lease 1 epoch=7 renewal=41 lease_ms=2500 host=h boot=b pidns=p pid=1 started=1 stray\n",
        "\u{0}\u{1}\u{2}dropfetch-lease 1 epoch=7\n",
    ])
    func garbageIsRefused(_ text: String) {
        #expect(WorkLease.Record.parse(Array(text.utf8)) == nil, "\(text.debugDescription)")
    }

    @Test("random bytes and an over-long line parse to nothing")
    func noiseIsRefused() {
        for seed in UInt64(1)...50 {
            let noise = TestHTTPServer.randomBytes(Int(seed) * 13, seed: seed)
            #expect(WorkLease.Record.parse(noise) == nil, "seed \(seed)")
        }
        // The record cut at 1024 bytes loses its last fields.
        var long = Self.record()
        long.host = String(repeating: "h", count: 1_100)
        #expect(WorkLease.Record.parse(long.encoded()) == nil)
    }
}
