import DropFetch
import Foundation
import Testing

/// A config reload that moves a class's destination applies to jobs that have not started
/// (docs/config.md, Reloading): a started job finishes in the folder it began in.
@Suite("Reload of a class's destination, end to end")
struct ReloadDestinationTests {
    /// The config with class `media` (jobs of inbox/media/) writing into `destination`, retried
    /// `retryDelay` after a failure.
    private static func mediaClass(_ destination: String, retryDelay: String = "100ms") -> String {
        """
        classes:
          - name: media
            match: { folder: media }
            destination: \(destination)
            retry: { attempts: 3, initial_delay: \(retryDelay), max_delay: \(retryDelay) }

        """
    }

    /// Serves `/slow.bin` (300,000 bytes over about 3 s: 20,000 every 200 ms), starts a daemon whose
    /// class `media` writes into `folder`, drops `slow.url` into inbox/media/ and waits until its
    /// part holds data. Returns the body.
    private static func startSlowDownload(from server: TestHTTPServer, into folder: String, seed: UInt64,
                                          _ fixture: SpoolFixture) throws -> [UInt8] {
        let body = TestHTTPServer.randomBytes(300_000, seed: seed)
        server.serve("/slow.bin", body: body, faults: [.drip(bytesPerChunk: 20_000, interval: .milliseconds(200))])
        try fixture.writeConfig(mediaClass(folder))
        try fixture.startDaemon()
        try fixture.drop("slow.url", server.url("/slow.bin") + "\n", folder: "media")
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(10)) {
            (fixture.fileSize(folder + "/.slow.bin.part") ?? 0) > 0
        }, "\(fixture.log)")
        return body
    }

    /// Serves `/cut.bin` (60,000 bytes, the first connection cut after 20,000), starts a daemon with
    /// `config`, drops `cut.url` (its URL, then `jobLines`) into inbox/media/ and waits until the
    /// part at `part` holds the 20,000 bytes while the retry waits. Returns the body.
    private static func startCutDownload(from server: TestHTTPServer, config: String, jobLines: String = "",
                                         part: String, seed: UInt64, _ fixture: SpoolFixture) throws -> [UInt8] {
        let body = TestHTTPServer.randomBytes(60_000, seed: seed)
        server.serve("/cut.bin", body: body, faults: [.times(1, .dropAfter(bytes: 20_000))])
        try fixture.writeConfig(config)
        try fixture.startDaemon()
        try fixture.drop("cut.url", server.url("/cut.bin") + "\n" + jobLines, folder: "media")
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(10)) {
            server.requests(to: "/cut.bin").count == 1 && fixture.fileSize(part) == 20_000 && fixture.log.contains("retry_in")
        }, "\(fixture.log)")
        return body
    }

    @Test("a download running when a reload moves its class's destination is published where it began; a job dropped after the reload goes to the new folder")
    func runningDownloadKeepsItsFolder() throws {
        let server = try TestHTTPServer()
        let later = TestHTTPServer.randomBytes(5_000, seed: 342)
        server.serve("/later.bin", body: later)
        let fixture = try SpoolFixture()
        let first = fixture.root.path + "/first", second = fixture.root.path + "/second"
        let body = try Self.startSlowDownload(from: server, into: first, seed: 341, fixture)

        try fixture.writeConfig(Self.mediaClass(second))
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("config reloaded") }, "\(fixture.log)")
        #expect(fixture.fileSize(first + "/slow.bin") == nil, "the download ended before the reload: the test proves nothing")
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done").contains("slow.url") },
                "\(fixture.jobs(in: "failed")) \(fixture.log)")
        try fixture.drop("later.url", server.url("/later.bin") + "\n", folder: "media")
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.jobs(in: "done").contains("later.url") }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)

        #expect(TestHTTPServer.sha256Hex(ofFileAt: first + "/slow.bin")
                == TestHTTPServer.sha256Hex(body))
        #expect(!FileManager.default.fileExists(atPath: second + "/slow.bin"))
        #expect(try fixture.status("done", "slow.url").downloads.first?.file == first + "/slow.bin")
        #expect(TestHTTPServer.sha256Hex(ofFileAt: second + "/later.bin")
                == TestHTTPServer.sha256Hex(later))
        #expect(try fixture.status("done", "later.url").downloads.first?.file == second + "/later.bin")
        #expect(fixture.jobs(in: "failed").isEmpty)
    }

    @Test("a download waiting for its retry with data when a reload moves its class's destination resumes its part where it began (Range: bytes=20000-)")
    func waitingDownloadResumesInItsFolder() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        let first = fixture.root.path + "/first", second = fixture.root.path + "/second"
        let body = try Self.startCutDownload(from: server, config: Self.mediaClass(first, retryDelay: "6s"),
                                             part: first + "/.cut.bin.part", seed: 343, fixture)

        try fixture.writeConfig(Self.mediaClass(second, retryDelay: "6s"))
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("config reloaded") }, "\(fixture.log)")
        #expect(server.requests(to: "/cut.bin").count == 1, "the retry came before the reload: the test proves nothing")
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done").contains("cut.url") },
                "\(fixture.jobs(in: "failed")) \(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)

        #expect(TestHTTPServer.sha256Hex(ofFileAt: first + "/cut.bin")
                == TestHTTPServer.sha256Hex(body))
        #expect(!FileManager.default.fileExists(atPath: second + "/cut.bin"))
        #expect(!FileManager.default.fileExists(atPath: first + "/.cut.bin.part"))
        #expect(server.requests(to: "/cut.bin").map { $0.header("Range") } == [nil, "bytes=20000-"])
        #expect(try fixture.status("done", "cut.url").downloads.first?.file == first + "/cut.bin")
    }

    @Test("a class's folder moved (mv, same file system) and named in its new place by a reload while a download runs: the download is published in the moved folder")
    func folderMovedAndRenamedInTheConfig() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        let first = fixture.root.path + "/first", moved = fixture.root.path + "/moved"
        let body = try Self.startSlowDownload(from: server, into: first, seed: 346, fixture)

        #expect(rename(first, moved) == 0)
        try fixture.writeConfig(Self.mediaClass(moved))
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("config reloaded") }, "\(fixture.log)")
        #expect(fixture.fileSize(moved + "/slow.bin") == nil, "the download ended before the reload: the test proves nothing")
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done").contains("slow.url") },
                "\(fixture.jobs(in: "failed")) \(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)

        #expect(TestHTTPServer.sha256Hex(ofFileAt: moved + "/slow.bin")
                == TestHTTPServer.sha256Hex(body))
        #expect(!FileManager.default.fileExists(atPath: first), "the old path was made again")
        #expect(try fixture.status("done", "slow.url").downloads.first?.file == moved + "/slow.bin")
    }

    @Test("a class's folder moved and named in its new place by a reload while a download with an absolute dir= waits for its retry with data: resumed there (Range: bytes=20000-); the status file and DROPFETCH_FILES name the new place")
    func folderMovedWhileDownloadWaits() throws {
        let server = try TestHTTPServer()
        let fixture = try SpoolFixture()
        let first = fixture.root.path + "/first", moved = fixture.root.path + "/moved"
        let files = fixture.root.path + "/files.txt"
        let hook = "hooks: { on_done: [/bin/sh, -c, 'printf %s \"$DROPFETCH_FILES\" > \(files)'] }\n"
        // An absolute dir= is checked against the folder the job was admitted under.
        let body = try Self.startCutDownload(from: server, config: Self.mediaClass(first, retryDelay: "12s") + hook,
                                             jobLines: "  dir=\(first)/sub\n", part: first + "/sub/.cut.bin.part", seed: 347, fixture)

        #expect(rename(first, moved) == 0)
        try fixture.writeConfig(Self.mediaClass(moved, retryDelay: "12s") + hook)
        #expect(try waitUntil(timeout: .seconds(10)) { fixture.log.contains("config reloaded") }, "\(fixture.log)")
        #expect(server.requests(to: "/cut.bin").count == 1, "the retry came before the reload: the test proves nothing")
        // The retry comes 6–12 s after the cut (jitter): time for the move and the reload first.
        #expect(try waitUntil(timeout: .seconds(30)) {
            fixture.jobs(in: "done").contains("cut.url") && ((try? String(contentsOfFile: files, encoding: .utf8)) ?? "").hasSuffix("cut.bin")
        }, "\(fixture.jobs(in: "failed")) \(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)

        #expect(TestHTTPServer.sha256Hex(ofFileAt: moved + "/sub/cut.bin") == TestHTTPServer.sha256Hex(body))
        #expect(server.requests(to: "/cut.bin").map { $0.header("Range") } == [nil, "bytes=20000-"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: moved + "/sub") == ["cut.bin"])
        #expect(!FileManager.default.fileExists(atPath: first), "the old path was made again")
        #expect(try fixture.status("done", "cut.url").downloads.first?.file == moved + "/sub/cut.bin")
        #expect(try String(contentsOfFile: files, encoding: .utf8) == moved + "/sub/cut.bin")
    }
}
