import DropFetch
import Foundation
import Glibc
import Testing

/// A full destination (a small tmpfs): the download waits with `no_space` instead of failing,
/// the agent keeps serving other jobs, and it finishes once there is room (docs/architecture.md:
/// check free space before a big download, not only fail when the disk fills).
@Suite("Disk full, end to end", .serialized,
       .enabled(if: getuid() == 0, "mounting a tmpfs as the destination needs root (mount(2))"))
struct DiskFullTests {
    /// The download error of `work/test-agent/<job>.state.json`, while the job runs or waits.
    static func stateError(_ fixture: SpoolFixture, _ job: String) -> Failure? {
        let path = fixture.spool + "/work/test-agent/" + String(job.dropLast(4)) + ".state.json"
        guard let data = FileManager.default.contents(atPath: path), let state = StatusRecord.decode(Array(data)) else { return nil }
        return state.downloads.first?.error
    }

    @Test("a 3 MB download into a 2 MB tmpfs waits with no_space, a small job is done meanwhile, a bigger disk finishes it")
    func fullDiskWaits() throws {
        let server = try TestHTTPServer()
        let big = TestHTTPServer.randomBytes(3_000_000, seed: 9_500)
        let small = TestHTTPServer.randomBytes(50_000, seed: 9_501)
        server.serve("/big.bin", body: big)
        server.serve("/small.bin", body: small)
        // The small job goes to another disk: the full one has no room for anybody.
        let elsewhere = FileManager.default.temporaryDirectory.path + "/dropfetch-elsewhere-\(UUID().uuidString)"
        let fixture = try SpoolFixture(extraConfig: """
            classes:
              - name: elsewhere
                match: { url: "*/small.bin" }
                destination: \(elsewhere)

            """)
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        let disk = try TmpfsMount(at: fixture.destination, size: "2m")
        defer { disk.unmount(); withExtendedLifetime(fixture) {} }

        try fixture.startDaemon()
        try fixture.drop("big.url", server.url("/big.bin") + "\n")
        #expect(try waitUntil { Self.stateError(fixture, "big.url")?.kind == .noSpace }, "\(fixture.log)")
        // retry.attempts is 3: a full disk is waited out however many attempts that takes.
        #expect(try waitUntil { server.requests(to: "/big.bin").count >= 5 }, "\(fixture.log)")
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.jobs(in: "work/test-agent") == ["big.url"])
        #expect(fixture.log.contains("no_space"))
        #expect(!FileManager.default.fileExists(atPath: fixture.destination + "/big.bin"), "a partial file under its final name")
        let kept = fixture.fileSize(fixture.destination + "/.big.bin.part") ?? 0
        #expect(kept > 1_000_000, "the data that fitted is kept for the resume, not thrown away (\(kept) bytes)")

        try fixture.drop("small.url", server.url("/small.bin") + "\n")
        #expect(try waitUntil { fixture.jobs(in: "done") == ["small.url"] }, "\(fixture.log)")
        #expect(FileManager.default.contents(atPath: elsewhere + "/small.bin") == Data(small))
        #expect(fixture.jobs(in: "work/test-agent") == ["big.url"], "still waiting for room")

        try disk.resize("8m")
        #expect(try waitUntil(timeout: .seconds(30)) { fixture.jobs(in: "done").count == 2 }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)
        let status = try fixture.status("done", "big.url")
        #expect(status.state == .done)
        #expect(status.downloads.first?.sha256 == TestHTTPServer.sha256Hex(big))
        #expect(try #require(status.downloads.first?.resumedFrom) > 1_000_000, "resumed from the kept data")
        let file = try #require(fixture.downloaded("big.bin"))
        #expect(TestHTTPServer.sha256Hex(file) == TestHTTPServer.sha256Hex(big))
        #expect(fixture.destinationNames() == ["big.bin"])
    }

    @Test("limits.min_free_space 2MB on a 4 MB tmpfs: a 3 MB file waits (no_space) without filling the disk, 100 KB is done")
    func minFreeSpaceWaits() throws {
        let server = try TestHTTPServer()
        let big = TestHTTPServer.randomBytes(3_000_000, seed: 9_600)
        let small = TestHTTPServer.randomBytes(100_000, seed: 9_601)
        server.serve("/big.bin", body: big)
        server.serve("/small.bin", body: small)
        let fixture = try SpoolFixture(extraConfig: "limits: { min_free_space: 2MB }\n")
        let disk = try TmpfsMount(at: fixture.destination, size: "4m")
        defer { disk.unmount(); withExtendedLifetime(fixture) {} }

        try fixture.startDaemon()
        try fixture.drop("big.url", server.url("/big.bin") + "\n")
        try fixture.drop("small.url", server.url("/small.bin") + "\n")
        #expect(try waitUntil { fixture.jobs(in: "done") == ["small.url"] }, "\(fixture.log)")
        #expect(try waitUntil { Self.stateError(fixture, "big.url")?.kind == .noSpace }, "\(fixture.log)")
        #expect(Self.stateError(fixture, "big.url")?.message.contains("min_free_space") == true)
        #expect(try waitUntil { server.requests(to: "/big.bin").count >= 3 }, "\(fixture.log)")
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.jobs(in: "work/test-agent") == ["big.url"])
        #expect(fixture.downloaded("small.bin") == small)
        #expect((fixture.fileSize(fixture.destination + "/.big.bin.part") ?? 0) == 0, "the big file must not start")
        #expect(try disk.availableBytes() > 3 * 1024 * 1024, "the disk was not filled")

        try disk.resize("8m")
        #expect(try waitUntil(timeout: .seconds(30)) { fixture.jobs(in: "done").count == 2 }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)
        #expect(try fixture.status("done", "big.url").downloads.first?.sha256 == TestHTTPServer.sha256Hex(big))
        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(big))
        #expect(fixture.destinationNames() == ["big.bin", "small.bin"])
    }

    /// Fills the tmpfs at `path` with `filler` (created, written until ENOSPC); with `inodes`,
    /// also creates empty files until no inode is left. Returns the files to remove for room.
    private static func fill(_ path: String, inodes: Bool) -> [String] {
        let filler = path + "/filler"
        let descriptor = open(filler, O_WRONLY | O_CREAT, 0o644)
        #expect(descriptor >= 0)
        let zeros = [UInt8](repeating: 0, count: 4096)
        while write(descriptor, zeros, zeros.count) > 0 {}
        #expect(errno == ENOSPC)
        close(descriptor)
        var made = [filler]
        while inodes {
            let name = path + "/inode\(made.count)"
            let created = open(name, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            if created < 0 {
                #expect(errno == ENOSPC)
                break
            }
            close(created)
            made.append(name)
        }
        return made
    }

    /// The space given back (`fillers` removed): the waiting job is done, whole, under its own name.
    private static func expectDoneOnceFreed(_ fillers: [String], _ fixture: SpoolFixture, _ body: [UInt8]) throws {
        for filler in fillers { try FileManager.default.removeItem(atPath: filler) }
        #expect(try waitUntil { fixture.jobs(in: "done") == ["f.url"] }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)
        #expect(try fixture.status("done", "f.url").downloads.first?.sha256 == TestHTTPServer.sha256Hex(body))
        #expect(fixture.downloaded("f.bin") == body)
        #expect(fixture.destinationNames() == ["f.bin"])
    }

    @Test("a destination too full to take the name (no inode left for the .part): the job waits with no_space, fetching nothing, then is done")
    func fullDiskBeforeTheName() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(20_000, seed: 9_700)
        server.serve("/f.bin", body: body)
        let fixture = try SpoolFixture()
        let disk = try TmpfsMount(at: fixture.destination, size: "1m", inodes: 16)
        defer { disk.unmount(); withExtendedLifetime(fixture) {} }
        // Not one block and not one inode left: the `.part` cannot be created.
        let fillers = Self.fill(fixture.destination, inodes: true)

        try fixture.startDaemon()
        try fixture.drop("f.url", server.url("/f.bin") + "\n")
        #expect(try waitUntil { Self.stateError(fixture, "f.url")?.kind == .noSpace }, "\(fixture.log)")
        // Waited out past retry.attempts (3), never failed, nothing fetched meanwhile.
        #expect(try waitUntil { fixture.log.components(separatedBy: "no_space").count > 5 }, "\(fixture.log)")
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.jobs(in: "work/test-agent") == ["f.url"])
        #expect(server.requests(to: "/f.bin").isEmpty)

        try Self.expectDoneOnceFreed(fillers, fixture, body)
    }

    @Test("no block left but inodes: the name is taken (its owner mark needs no block), the data waits with no_space, never failing, then is done")
    func fullDiskAfterTheName() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(20_000, seed: 9_701)
        server.serve("/f.bin", body: body)
        let fixture = try SpoolFixture()
        let disk = try TmpfsMount(at: fixture.destination, size: "1m")
        defer { disk.unmount(); withExtendedLifetime(fixture) {} }
        let fillers = Self.fill(fixture.destination, inodes: false)

        try fixture.startDaemon()
        try fixture.drop("f.url", server.url("/f.bin") + "\n")
        #expect(try waitUntil { Self.stateError(fixture, "f.url")?.kind == .noSpace }, "\(fixture.log)")
        #expect(try waitUntil { fixture.log.components(separatedBy: "no_space").count > 5 }, "\(fixture.log)")
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.jobs(in: "work/test-agent") == ["f.url"])
        #expect(!FileManager.default.fileExists(atPath: fixture.destination + "/f.bin"))

        try Self.expectDoneOnceFreed(fillers, fixture, body)
    }

    @Test("filing that fails (done/ on another file system: EXDEV) is retried, never lost; --once exits 3; a later run files it")
    func failedFilingIsRetried() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(10_000, seed: 77)
        server.serve("/f.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.writeConfig("once_wait: 2s\n")
        try fixture.drop("f.url", server.url("/f.bin") + "\n")
        try FileManager.default.createDirectory(atPath: fixture.spool + "/done", withIntermediateDirectories: true)
        let other = try TmpfsMount(at: fixture.spool + "/done", size: "1m")
        defer { other.unmount(); withExtendedLifetime(fixture) {} }

        #expect(try fixture.runOnce() == 3, "\(fixture.log)")
        #expect(fixture.jobs(in: "work/test-agent") == ["f.url"])
        #expect(fixture.jobs(in: "done").isEmpty && fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.log.contains("cannot file"), "\(fixture.log)")

        other.unmount()
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.jobs(in: "done") == ["f.url"])
        #expect(fixture.jobs(in: "work/test-agent").isEmpty)
        #expect(try fixture.status("done", "f.url").downloads.first?.sha256 == TestHTTPServer.sha256Hex(body))
        #expect(fixture.downloaded("f.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.requests(to: "/f.bin").count == 1, "the published file was fetched again")
    }
}

/// A tmpfs mounted over a folder for one test (mount(2), umount2(2)); needs root.
final class TmpfsMount {
    let path: String
    private var mounted = true

    init(at path: String, size: String, inodes: Int? = nil) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let options = "size=\(size),mode=0755" + (inodes.map { ",nr_inodes=\($0)" } ?? "")
        guard mount("tmpfs", path, "tmpfs", 0, options) == 0 else {
            throw TmpfsError.failed("mount tmpfs \(options) on \(path)", errno)
        }
    }

    deinit { unmount() }

    /// Grows or shrinks the file system in place (MS_REMOUNT), keeping its files.
    func resize(_ size: String) throws {
        guard mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT), "size=\(size)") == 0 else {
            throw TmpfsError.failed("remount \(path) size=\(size)", errno)
        }
    }

    /// Bytes free for unprivileged users (statvfs(3)).
    func availableBytes() throws -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { throw TmpfsError.failed("statvfs \(path)", errno) }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    func unmount() {
        guard mounted else { return }
        mounted = false
        umount2(path, Int32(MNT_DETACH))
    }
}

enum TmpfsError: Error {
    case failed(String, Int32)
}
