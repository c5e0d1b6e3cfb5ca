import DropFetch
import Foundation
import Testing

/// The spool and destinations the config names may be reached through symlinks (a mount point
/// linked into place, `/srv/downloads -> /mnt/disk2/downloads`): the admin wrote those paths.
/// Below them, a symlink is still refused (docs/security.md; `SymlinkSwapTests`).
@Suite("Spool and destinations behind symlinks, end to end")
struct SymlinkedRootsTests {
    @Test("spool, destination and a class's destination behind symlinks (one a parent, one the folder itself, created where missing): add, hold, release and run --once work; files land in the real folders and status files name them as configured")
    func rootsBehindSymlinks() throws {
        let server = try TestHTTPServer()
        let first = TestHTTPServer.randomBytes(9_000, seed: 371), second = TestHTTPServer.randomBytes(11_000, seed: 372)
        server.serve("/one.bin", body: first)
        server.serve("/two.bin", body: second)
        let fixture = try SpoolFixture()
        let root = fixture.root.path
        // links -> disk (a symlinked parent: spool/ and media/ are created through it);
        // downloads -> disk/dl (the destination folder itself a symlink).
        try FileManager.default.createDirectory(atPath: root + "/disk/dl", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/links", withDestinationPath: root + "/disk")
        try FileManager.default.createSymbolicLink(atPath: root + "/dl-link", withDestinationPath: root + "/disk/dl")
        let config = root + "/linked.yaml"
        try """
            spool: \(root)/links/spool
            destination: \(root)/dl-link
            agent_id: test-agent
            classes:
              - name: media
                match: { url: "*/two.bin" }
                destination: \(root)/links/media

            """.write(toFile: config, atomically: true, encoding: .utf8)

        #expect(try fixture.runCLI(["add", server.url("/one.bin")], config: config) == 0, "\(fixture.log)")
        #expect(try fixture.runCLI(["add", server.url("/two.bin")], config: config) == 0, "\(fixture.log)")
        #expect(try fixture.runCLI(["hold", "two.bin"], config: config) == 0, "\(fixture.log)")
        #expect(FileManager.default.fileExists(atPath: root + "/disk/spool/hold/two.bin.url"))
        #expect(try fixture.runCLI(["release", "two.bin"], config: config) == 0, "\(fixture.log)")
        #expect(try fixture.runCLI(["run", "--once"], config: config) == 0, "\(fixture.log)")

        #expect(TestHTTPServer.sha256Hex(ofFileAt: root + "/disk/dl/one.bin")
                == TestHTTPServer.sha256Hex(first))
        #expect(TestHTTPServer.sha256Hex(ofFileAt: root + "/disk/media/two.bin")
                == TestHTTPServer.sha256Hex(second))
        let done = (try? FileManager.default.contentsOfDirectory(atPath: root + "/disk/spool/done"))?.sorted()
        #expect(done == ["one.bin.status.json", "one.bin.url", "two.bin.status.json", "two.bin.url"], "\(fixture.log)")
        let status = { (name: String) -> String? in
            let data = FileManager.default.contents(atPath: root + "/disk/spool/done/\(name).status.json")
            return data.flatMap { StatusRecord.decode(Array($0)) }?.downloads.first?.file
        }
        #expect(status("one.bin") == root + "/dl-link/one.bin")
        #expect(status("two.bin") == root + "/links/media/two.bin")
    }

    @Test("killed while a download waits with 10,000 bytes, restarted with its destination named through a symlink to the same folder: resumed from its part (Range: bytes=10000-)")
    func restartThroughSymlinkResumes() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(50_000, seed: 373)
        server.serve("/cut.bin", body: body, faults: [.times(1, .dropAfter(bytes: 10_000))])
        let fixture = try SpoolFixture()
        let first = fixture.root.path + "/first", alias = fixture.root.path + "/alias"
        let daemonConfig = try Self.agentConfig(fixture, destination: first)
        let daemon = try AgentProcess(["run"], config: daemonConfig, log: fixture.logPath, in: fixture)
        try daemon.start()
        try fixture.drop("cut.url", server.url("/cut.bin") + "\n")
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(10)) {
            server.requests(to: "/cut.bin").first?.isFinished == true
                && fixture.fileSize(first + "/.cut.bin.part") == 10_000 && fixture.log.contains("retry_in=")
        }, "\(fixture.logTail())")
        #expect(daemon.kill() == .signalled(SIGKILL))
        #expect(server.requests(to: "/cut.bin").count == 1, "the retry came before the kill: the case was not exercised")
        try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: first)

        let once = try AgentProcess.run(["run", "--once"], config: try Self.agentConfig(fixture, destination: alias), log: fixture.logPath,
                                        in: fixture, timeout: .seconds(40))
        #expect(once == .exited(0), "\(fixture.logTail())")
        #expect(TestHTTPServer.sha256Hex(ofFileAt: first + "/cut.bin")
                == TestHTTPServer.sha256Hex(body))
        #expect(server.requests(to: "/cut.bin").map { $0.header("Range") } == [nil, "bytes=10000-"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: first).sorted() == ["cut.bin"])
    }

    /// A folder `media` at `<root>/disk/media`, and a link to it another user could replace:
    /// `<root>/open/media`, in a world-writable folder. Returns the link's path.
    private static func linkAnyoneCouldReplace(in root: String) throws -> String {
        try FileManager.default.createDirectory(atPath: root + "/disk/media", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/open", withIntermediateDirectories: true)
        chmod(root + "/open", 0o777)
        try FileManager.default.createSymbolicLink(atPath: root + "/open/media", withDestinationPath: root + "/disk/media")
        return root + "/open/media"
    }

    @Test("a class destination linked from a folder anyone can write: check exits 2 naming it; run --once exits 3 naming it before it claims a job")
    func refusedClassDestinationAtStart() throws {
        let fixture = try SpoolFixture()
        let root = fixture.root.path
        let link = try Self.linkAnyoneCouldReplace(in: root)
        let path = try fixture.writeAgentConfig(
            agentID: "test-agent", "classes:\n  - { name: media, match: { url: \"*/media.bin\" }, destination: \(link)/deeper }\n")

        let check = try CommandRun(["check", "--config", path], in: root)
        #expect(check.status == 2)
        #expect(check.stderr.contains("class media destination \(link)/deeper: \(link)/deeper is reached through a symlink"),
                "\(check.stderr)")

        try fixture.drop("plain.url", "http://127.0.0.1:9/plain.bin\n")
        try fixture.drop("media.url", "http://127.0.0.1:9/media.bin\n")
        #expect(try AgentProcess.run(["run", "--once"], config: path, log: fixture.logPath, in: fixture,
                                     timeout: .seconds(30)) == .exited(3), "\(fixture.logTail())")
        #expect(fixture.log.contains("the destination is not a folder reached only through symlinks root or this user made"), "\(fixture.logTail())")
        #expect(fixture.log.contains(link + "/deeper"), "\(fixture.logTail())")
        #expect(fixture.jobs(in: "inbox").sorted() == ["media.url", "plain.url"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/disk/media").isEmpty)
    }

    @Test("a reload that names a class destination linked from a folder anyone can write: that class's job fails as internal naming the destination; another job is done")
    func refusedClassDestinationAfterReload() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(7_000, seed: 374)
        server.serve("/plain.bin", body: body)
        server.serve("/media.bin", body: body)
        let fixture = try SpoolFixture()
        let root = fixture.root.path
        let link = try Self.linkAnyoneCouldReplace(in: root)
        let mediaClass = { (destination: String) in
            "classes:\n  - { name: media, match: { url: \"*/media.bin\" }, destination: \(destination) }\n"
        }
        try fixture.writeConfig(mediaClass(root + "/disk/media"))
        try fixture.startDaemon()
        // The config watcher is in place once the agent says it started.
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("agent started") }, "\(fixture.log)")
        try fixture.writeConfig(mediaClass(link))
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("config reloaded") }, "\(fixture.log)")
        #expect(fixture.log.contains("config reload: the destination is not a folder reached only through symlinks"), "\(fixture.log)")

        try fixture.drop("plain.url", server.url("/plain.bin") + "\n")
        try fixture.drop("media.url", server.url("/media.bin") + "\n")
        #expect(try waitUntil(timeout: .seconds(10)) {
            fixture.jobs(in: "done").contains("plain.url") && fixture.jobs(in: "failed").contains("media.url")
        }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)
        #expect(TestHTTPServer.sha256Hex(ofFileAt: fixture.destination + "/plain.bin") == TestHTTPServer.sha256Hex(body))
        let error = try fixture.status("failed", "media.url").error
        #expect(error?.kind == .internal, "\(fixture.log)")
        #expect(error?.message.contains("cannot use the destination folder \(link)") == true, "\(String(describing: error))")
        #expect(server.requests(to: "/media.bin").isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/disk/media").isEmpty)
    }

    /// The fixture's spool, `destination`, and a retry 4 s after a failure.
    private static func agentConfig(_ fixture: SpoolFixture, destination: String) throws -> String {
        let path = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 4s, max_delay: 4s }")
        let text = try String(contentsOfFile: path, encoding: .utf8)
            .replacingOccurrences(of: "destination: \(fixture.destination)\n", with: "destination: \(destination)\n")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
