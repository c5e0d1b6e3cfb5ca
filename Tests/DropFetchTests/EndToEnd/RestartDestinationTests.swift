import DropFetch
import Foundation
import Testing

/// A restart under a config that moved a class's destination (docs/config.md, Reloading): the
/// downloads start over in the new folder, and the parts left in the old one do not stay behind
/// for good (nothing else would remove them); the same folder under another path is no move.
@Suite("Restart with a moved destination, end to end")
struct RestartDestinationTests {
    private static func config(_ fixture: SpoolFixture, destination: String) throws -> String {
        try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 4s, max_delay: 4s }", """
            classes:
              - name: media
                match: { folder: media }
                destination: \(destination)

            """)
    }

    /// Starts a daemon under `destination`, drops `cut.url` into inbox/media/ and kills the daemon
    /// (-9) once its first connection was cut after 10,000 bytes and it waits for its retry.
    private static func leaveWaiting(_ server: TestHTTPServer, _ fixture: SpoolFixture, destination: String) throws {
        let daemon = try AgentProcess(["run"], config: try config(fixture, destination: destination), log: fixture.logPath, in: fixture)
        try daemon.start()
        try fixture.drop("cut.url", server.url("/cut.bin") + "\n", folder: "media")
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(10)) {
            server.requests(to: "/cut.bin").first?.isFinished == true
                && fixture.fileSize(destination + "/.cut.bin.part") == 10_000 && fixture.log.contains("retry_in=")
        }, "\(fixture.logTail())")
        #expect(daemon.kill() == .signalled(SIGKILL))
        #expect(server.requests(to: "/cut.bin").count == 1, "the retry came before the kill: the case was not exercised")
    }

    @Test("killed while a download waits with 10,000 bytes, restarted with its class's destination moved: fetched whole into the new folder, and the old folder keeps no .part or record")
    func movedDestinationStartsOverAndCleansUp() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(50_000, seed: 361)
        server.serve("/cut.bin", body: body, faults: [.times(1, .dropAfter(bytes: 10_000))])
        let fixture = try SpoolFixture()
        let first = fixture.root.path + "/first", second = fixture.root.path + "/second"
        try Self.leaveWaiting(server, fixture, destination: first)

        let once = try AgentProcess.run(["run", "--once"], config: try Self.config(fixture, destination: second), log: fixture.logPath,
                                        in: fixture, timeout: .seconds(40))
        #expect(once == .exited(0), "\(fixture.logTail())")
        #expect(FileManager.default.contents(atPath: second + "/cut.bin").map { TestHTTPServer.sha256Hex(Array($0)) }
                == TestHTTPServer.sha256Hex(body))
        #expect(try fixture.status("done", "cut.url").downloads.first?.file == second + "/cut.bin")
        #expect(server.requests(to: "/cut.bin").map { $0.header("Range") } == [nil, nil])
        #expect(try FileManager.default.contentsOfDirectory(atPath: first) == [], "left in the old folder")
    }

    @Test("killed while a download waits with 10,000 bytes, restarted with the same destination written another way (a symlink to it): resumed from its part (Range: bytes=10000-)")
    func sameFolderUnderAnotherPathResumes() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(50_000, seed: 362)
        server.serve("/cut.bin", body: body, faults: [.times(1, .dropAfter(bytes: 10_000))])
        let fixture = try SpoolFixture()
        let first = fixture.root.path + "/first", alias = fixture.root.path + "/alias"
        try Self.leaveWaiting(server, fixture, destination: first)
        try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: first)

        let once = try AgentProcess.run(["run", "--once"], config: try Self.config(fixture, destination: alias), log: fixture.logPath,
                                        in: fixture, timeout: .seconds(40))
        #expect(once == .exited(0), "\(fixture.logTail())")
        #expect(FileManager.default.contents(atPath: first + "/cut.bin").map { TestHTTPServer.sha256Hex(Array($0)) }
                == TestHTTPServer.sha256Hex(body))
        #expect(server.requests(to: "/cut.bin").map { $0.header("Range") } == [nil, "bytes=10000-"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: first).sorted() == ["cut.bin"])
    }
}
