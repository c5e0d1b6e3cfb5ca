import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 25, items 11 and 12: log lines and status fields a person reads. `too_large` says its
/// limit once; a reload with nothing changed says so; an unwritable destination stops `run` at
/// start (exit 3); an adopted job is named in `job=`; a cancelled download's `bytes` is 0 once
/// its data is removed.
@Suite("Messages a person reads, end to end", .serialized)
struct HonestMessagesTests {
    @Test("too_large names max_file_size once, without repeating libcurl's text")
    func tooLargeMessage() throws {
        let server = try TestHTTPServer()
        server.serve("/big.bin", body: TestHTTPServer.randomBytes(5_000, seed: 25_110))
        let fixture = try SpoolFixture(extraConfig: "limits: { max_file_size: 1KB }\n")
        try fixture.drop("big.url", server.url("/big.bin") + "\n")

        #expect(try fixture.runOnce() == 1)

        let error = try #require(try fixture.status("failed", "big.url").error)
        #expect(error.kind == .tooLarge)
        #expect(error.message.contains("max_file_size"), "\(error.message)")
        #expect(!error.message.contains("exceeded: Maximum file size exceeded"), "\(error.message)")
    }

    @Test("a config rewritten with nothing changed logs `config unchanged`")
    func unchangedReload() throws {
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        #expect(try waitUntil { fixture.log.contains("agent started") }, "\(fixture.log)")
        try fixture.writeConfig("")
        #expect(try waitUntil { fixture.log.contains("msg=\"config unchanged\"") }, "\(fixture.logTail())")
        #expect(!fixture.log.contains("config reloaded"))
        #expect(try fixture.stopDaemon() == 0)
    }

    /// One edit of a broken config is one error line, though it reaches the agent twice (the watch
    /// and a SIGHUP, as `systemctl reload` after an edit does); a new edit is reported again.
    @Test("a broken config reloaded twice is reported once; each new edit once more")
    func brokenReloadReportedOnce() throws {
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        #expect(try waitUntil { fixture.log.contains("agent started") }, "\(fixture.log)")
        func errors() -> Int { fixture.log.components(separatedBy: "config not reloaded").count - 1 }
        try fixture.writeConfig("concurrency: { total: nope }\n")
        #expect(try waitUntil { errors() >= 1 }, "\(fixture.logTail())")
        let pid = try #require(fixture.daemonPID)
        // Sent before the next edit: the agent reads the signal no later than that edit's event.
        kill(pid, SIGHUP)
        try fixture.writeConfig("concurrency: { total: still-nope }\n")
        #expect(try waitUntil { errors() >= 2 }, "\(fixture.logTail())")
        #expect(try fixture.stopDaemon() == 0)
        #expect(errors() == 2, "one error line an edit: \(fixture.logTail())")
    }

    @Test("a read-only destination stops run at start with exit 3 naming it; the job stays in the inbox",
          .enabled(if: getuid() == 0, "mounting a read-only tmpfs needs root (mount(2))"))
    func readOnlyDestination() throws {
        let server = try TestHTTPServer()
        server.serve("/f.bin", body: TestHTTPServer.randomBytes(1_000, seed: 25_112))
        let fixture = try SpoolFixture()
        let disk = try TmpfsMount(at: fixture.destination, size: "1m")
        defer { disk.unmount(); withExtendedLifetime(fixture) {} }
        #expect(mount("tmpfs", fixture.destination, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), "size=1m") == 0)
        try fixture.drop("f.url", server.url("/f.bin") + "\n")

        #expect(try fixture.runOnce(timeout: 30) == 3, "\(fixture.logTail())")

        #expect(fixture.log.contains("the destination cannot take new files"), "\(fixture.logTail())")
        #expect(fixture.log.contains(fixture.destination))
        #expect(fixture.jobs(in: "inbox") == ["f.url"])
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(server.requests(to: "/f.bin").isEmpty)
    }

    /// A 1.2 MB download sent 40 KB every 60 ms, the first time.
    private func slowServer(_ path: String, seed: UInt64) throws -> TestHTTPServer {
        let server = try TestHTTPServer()
        server.serve(path, body: TestHTTPServer.randomBytes(1_200_000, seed: seed),
                     faults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))])
        return server
    }

    @Test("a job adopted from a killed run is logged with job=, not in the message")
    func adoptedJobField() throws {
        let server = try slowServer("/k.bin", seed: 25_113)
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("k.url", server.url("/k.bin") + "\n")
        #expect(try waitUntil { (fixture.fileSize(fixture.partPath("k.bin")) ?? 0) > 100_000 }, "\(fixture.logTail())")
        fixture.killDaemon()

        #expect(try fixture.runOnce() == 0, "\(fixture.logTail())")
        let line = try #require(fixture.log.split(separator: "\n").first { $0.contains("resuming a job of an earlier run") },
                                "\(fixture.logTail())")
        #expect(line.contains("job=k.url"), "\(line)")
        #expect(!line.contains("resuming k.url"), "\(line)")
    }

    @Test("cancel of a running download: the record's bytes is 0, as its partial data is removed")
    func cancelledBytes() throws {
        let server = try slowServer("/c.bin", seed: 25_121)
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("c.url", server.url("/c.bin") + "\n")
        #expect(try waitUntil {
            (StatusFields.int(StatusFields.firstDownload(fixture.stateJSON("c.url"))["bytes"]) ?? 0) > 0
        }, "\(fixture.logTail())")

        #expect(try fixture.runCLI(["cancel", "c"]) == 0)
        #expect(try waitUntil { !FileManager.default.fileExists(atPath: fixture.partPath("c.bin")) }, "\(fixture.logTail())")
        try fixture.stopDaemon()

        let download = StatusFields.firstDownload(fixture.statusObject("failed", "c.url"))
        #expect(download["state"] as? String == "cancelled")
        #expect(StatusFields.int(download["bytes"]) == 0, "\(download)")
    }
}
