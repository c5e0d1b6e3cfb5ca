import DropFetch
import Foundation
import Glibc
import Testing

/// A claim that fails for another reason than a lost race (here EXDEV: an inbox subfolder that is
/// a bind mount, so the rename into work/ crosses mounts) leaves the job in the inbox and is tried
/// again later; `run --once` says the job was left (75) instead of ending as if it were done.
@Suite("Claims that fail, end to end", .serialized,
       .enabled(if: getuid() == 0, "a bind mount needs root (mount(2))"))
struct ClaimFailureTests {
    /// `inbox/sub/x.url` exists twice: in the inbox's own folder, and in another folder
    /// bind-mounted over it, where the agent sees it and cannot claim it.
    private static func hiddenBehindMount(_ fixture: SpoolFixture, _ content: String) throws -> BindMount {
        try fixture.drop("x.url", content, folder: "sub")
        let elsewhere = fixture.spool + "/../elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.spool + "/inbox/sub/x.url", toPath: elsewhere + "/x.url")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -10)], ofItemAtPath: elsewhere + "/x.url")
        return try BindMount(elsewhere, at: fixture.spool + "/inbox/sub")
    }

    @Test("run --once: the job stays in the inbox, the run exits 75; the next run, with the mount gone, does it")
    func onceLeavesTheJob() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(5_000, seed: 9_800)
        server.serve("/x.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "once_wait: 3s\n")
        let mount = try Self.hiddenBehindMount(fixture, server.url("/x.bin") + "\n")
        defer { mount.unmount(); withExtendedLifetime(fixture) {} }

        #expect(try fixture.runOnce() == 75, "\(fixture.log)")
        #expect(fixture.jobs(in: "inbox/sub") == ["x.url"])
        #expect(fixture.jobs(in: "done").isEmpty && fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.log.components(separatedBy: "cannot claim").count > 2, "tried more than once: \(fixture.log)")
        #expect(server.requests(to: "/x.bin").isEmpty)

        mount.unmount()
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.jobs(in: "done") == ["x.url"])
        #expect(fixture.downloaded("x.bin") == body)
    }

    @Test("a daemon tries the claim again, without waiting for a rescan, and does the job once it can")
    func daemonTriesAgain() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(5_000, seed: 9_801)
        server.serve("/x.bin", body: body)
        let fixture = try SpoolFixture()
        let mount = try Self.hiddenBehindMount(fixture, server.url("/x.bin") + "\n")
        defer { mount.unmount(); withExtendedLifetime(fixture) {} }

        try fixture.startDaemon()
        // scan_interval is 30 s: a second try within 20 s is the claim's own retry.
        #expect(try waitUntil { fixture.log.components(separatedBy: "cannot claim").count > 2 }, "\(fixture.log)")
        #expect(fixture.jobs(in: "inbox/sub") == ["x.url"])
        mount.unmount()
        #expect(try waitUntil { fixture.jobs(in: "done") == ["x.url"] }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)
        #expect(try fixture.status("done", "x.url").downloads.first?.sha256 == TestHTTPServer.sha256Hex(body))
        #expect(server.requests(to: "/x.bin").count == 1)
    }
}

/// A folder bind-mounted over another for one test (mount(2) with MS_BIND, umount2(2)).
private final class BindMount {
    private let target: String
    private var mounted = true

    init(_ source: String, at target: String) throws {
        self.target = target
        guard mount(source, target, nil, UInt(MS_BIND), nil) == 0 else {
            throw BindMountError(text: "mount --bind \(source) \(target): errno \(errno)")
        }
    }

    deinit { unmount() }

    func unmount() {
        guard mounted else { return }
        mounted = false
        umount2(target, Int32(MNT_DETACH))
    }
}

private struct BindMountError: Error {
    let text: String
}
