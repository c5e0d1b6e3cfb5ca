@testable import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 23, item 4: a kill -9 loses nothing. On the boot that wrote it, the whole `.part` is
/// resumed once its validator checks out (the page cache outlives the process); a record written
/// on another boot resumes only the fsynced prefix it counts; a full disk does not freeze it.
@Suite("kill -9 and resume, end to end", .serialized)
struct KillResumeTests {
    static let body = TestHTTPServer.randomBytes(4_000_000, seed: 23_400)

    /// The job's `.part` size, or 0.
    static func partSize(_ fixture: SpoolFixture) -> Int {
        fixture.fileSize(fixture.destination + "/.big.bin.part") ?? 0
    }

    /// The record beside the `.part`, read with the spool's key as the agent reads it (nil before
    /// the agent made the key).
    static func record(_ fixture: SpoolFixture) throws -> ResumeRecord? {
        guard let key = RecordKey.folder().flatMap(RecordKey.read(inFolder:)) else { return nil }
        guard let destination = try? DirectoryHandle.openRoot(fixture.destination, create: false) else { return nil }
        return PartFile.readRecord(".big.bin.part.json", in: destination, key: key)
    }

    @Test("killed within 100 ms of its first body bytes, the restarted agent asks for the rest from the .part's size")
    func killRightAfterFirstBytes() throws {
        let server = try TestHTTPServer()
        // The first answer trickles (64 KiB every 20 ms): the kill lands long before a checkpoint.
        server.serve("/big.bin", body: Self.body, faults: [.times(1, .drip(bytesPerChunk: 65_536, interval: .milliseconds(20)))])
        let fixture = try SpoolFixture()
        try fixture.drop("big.url", server.url("/big.bin") + "\n")
        try fixture.startDaemon()
        #expect(try waitUntil(interval: .milliseconds(1)) { Self.partSize(fixture) > 0 }, "\(fixture.log)")
        fixture.killDaemon()
        let kept = Self.partSize(fixture)
        #expect(kept > 0 && kept < Self.body.count, "\(kept) bytes on disk at the kill")

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let requests = server.requests(to: "/big.bin")
        try #require(requests.count == 2, "\(requests)")
        #expect(requests[1].header("Range") == "bytes=\(kept)-", "resumed from the .part's size, not from a checkpoint")
        #expect(requests[1].header("If-Range") == "\"v1\"")
        let status = try fixture.status("done", "big.url")
        #expect(status.downloads.first?.resumedFrom == Int64(kept))
        // Only what the second run fetched is this run's: speeds are made of it (issue 36).
        #expect(status.downloads.first?.fetched == Int64(Self.body.count - kept))
        #expect(fixture.log.contains("fetched=\(Self.body.count - kept)"), "\(fixture.log)")
        #expect(status.downloads.first?.sha256 == TestHTTPServer.sha256Hex(Self.body))
        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(Self.body))
    }

    @Test("a record from another boot (a reboot, another host) resumes only the fsynced prefix it counts")
    func otherBootResumesSyncedPrefix() throws {
        let server = try TestHTTPServer()
        server.serve("/big.bin", body: Self.body, faults: [.times(1, .drip(bytesPerChunk: 65_536, interval: .milliseconds(20)))])
        let fixture = try SpoolFixture(extraConfig: "fsync: true\n")
        try fixture.drop("big.url", server.url("/big.bin") + "\n")
        try fixture.startDaemon()
        // Past the first checkpoint (about a second in), with more data than it counts.
        #expect(try waitUntil(timeout: .seconds(30)) {
            guard let record = try Self.record(fixture) else { return false }
            return record.bytes > 0 && Self.partSize(fixture) > Int(record.bytes) + 65_536
        }, "\(fixture.log)")
        fixture.killDaemon()
        var record = try #require(try Self.record(fixture))
        #expect(Self.partSize(fixture) > Int(record.bytes))
        // What the record looks like to a machine that booted since: same seal, other boot id.
        record.boot = "00000000-0000-4000-8000-000000000000"
        let image = ResumeRecordFile.image(record, key: try #require(RecordKey.folder().flatMap(RecordKey.read(inFolder:))))
        try Data(image).write(to: URL(fileURLWithPath: fixture.destination + "/.big.bin.part.json"))

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let requests = server.requests(to: "/big.bin")
        try #require(requests.count == 2, "\(requests)")
        #expect(requests[1].header("Range") == "bytes=\(record.bytes)-", "only the fsynced prefix is trusted")
        #expect(try fixture.status("done", "big.url").downloads.first?.resumedFrom == record.bytes)
        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(Self.body))
    }

    @Test("a full disk during a transfer, a kill, more room, a restart: it resumes from what is on disk",
          .enabled(if: getuid() == 0, "mounting a tmpfs as the destination needs root (mount(2))"))
    func fullDiskThenKill() throws {
        let server = try TestHTTPServer()
        let big = TestHTTPServer.randomBytes(3_000_000, seed: 23_401)
        server.serve("/big.bin", body: big)
        let fixture = try SpoolFixture()
        let disk = try TmpfsMount(at: fixture.destination, size: "2m")
        defer { disk.unmount(); withExtendedLifetime(fixture) {} }
        try fixture.startDaemon()
        try fixture.drop("big.url", server.url("/big.bin") + "\n")
        #expect(try waitUntil { DiskFullTests.stateError(fixture, "big.url")?.kind == .noSpace }, "\(fixture.log)")
        fixture.killDaemon()
        let kept = Self.partSize(fixture)
        #expect(kept > 1_000_000, "\(kept) bytes fitted")
        let before = server.requests(to: "/big.bin").count

        try disk.resize("8m")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let after = Array(server.requests(to: "/big.bin").dropFirst(before))
        #expect(after.first?.header("Range") == "bytes=\(kept)-", "\(after)")
        #expect(try fixture.status("done", "big.url").downloads.first?.resumedFrom == Int64(kept))
        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(big))
    }
}
