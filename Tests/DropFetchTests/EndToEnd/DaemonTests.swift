import DropFetch
import Foundation
import Testing

/// The daemon: jobs picked up through inotify, a stop that keeps data, a `kill -9` that loses nothing.
@Suite("Daemon, end to end")
struct DaemonTests {
    @Test("a job dropped into a running daemon's inbox (also a new subfolder) is done within seconds")
    func picksUpDroppedJobs() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(64_000, seed: 30)
        server.serve("/d.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        #expect(try waitUntil(timeout: .seconds(20)) { FileManager.default.fileExists(atPath: fixture.spool + "/work/test-agent/.lock") })

        try fixture.drop("first.url", server.url("/d.bin") + "\n")
        #expect(try waitUntil { fixture.jobs(in: "done") == ["first.url"] }, "\(fixture.log)")
        try fixture.drop("second.url", server.url("/d.bin") + "\n  out=second.bin\n", folder: "team/new")
        #expect(try waitUntil { fixture.jobs(in: "done").count == 2 }, "\(fixture.log)")

        #expect(try fixture.stopDaemon() == 0)
        #expect(fixture.downloaded("second.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(try fixture.status("done", "first.url").downloads.first?.sha256 == TestHTTPServer.sha256Hex(body))
    }

    @Test("kill -9 mid-transfer, then a restart: the job resumes from its .part and is filed once")
    func killNineResumes() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(2_000_000, seed: 31)
        server.serve("/slow.bin", body: body, faults: [.times(1, .drip(bytesPerChunk: 64_000, interval: .milliseconds(50)))])
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("slow.url", server.url("/slow.bin") + "\n")
        let part = fixture.destination + "/.slow.bin.part"
        #expect(try waitUntil { (fixture.fileSize(part) ?? 0) >= 300_000 }, "\(fixture.log)")
        // The agent counts data as resumable once it is durable (fdatasync, then the resume record).
        #expect(try waitUntil { (CrashSnapshot.resumableBytes(part: part, size: fixture.fileSize(part) ?? 0) ?? 0) > 0 })
        fixture.killDaemon()
        #expect(fixture.jobs(in: "done").isEmpty)
        #expect(FileManager.default.fileExists(atPath: fixture.spool + "/work/test-agent/slow.url"))
        let saved = try #require(fixture.fileSize(part))

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.jobs(in: "done") == ["slow.url"])
        #expect(fixture.downloaded("slow.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let last = try #require(server.completedRequests().last)
        let range = try #require(last.header("Range"))
        let offset = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
        #expect(offset > 0 && offset <= saved)
        #expect(last.status == 206)
        #expect(try fixture.status("done", "slow.url").downloads.first?.resumedFrom == Int64(offset))
        #expect(fixture.destinationNames() == ["slow.bin"])
        #expect(fixture.names(in: "work/test-agent").filter { !$0.hasPrefix(".") }.isEmpty)
    }

    @Test("SIGTERM mid-transfer exits 0 promptly and keeps the .part; the next run resumes")
    func sigtermKeepsPartialData() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_500_000, seed: 32)
        server.serve("/t.bin", body: body, faults: [.times(1, .drip(bytesPerChunk: 50_000, interval: .milliseconds(50)))])
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("t.url", server.url("/t.bin") + "\n")
        let part = fixture.destination + "/.t.bin.part"
        #expect(try waitUntil { (fixture.fileSize(part) ?? 0) >= 200_000 }, "\(fixture.log)")

        #expect(try fixture.stopDaemon(timeout: 5) == 0)
        #expect((fixture.fileSize(part) ?? 0) >= 200_000)
        #expect(fixture.jobs(in: "done").isEmpty)

        #expect(try fixture.runOnce() == 0)
        #expect(fixture.downloaded("t.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect((try fixture.status("done", "t.url").downloads.first?.resumedFrom ?? 0) >= 200_000)
    }
}
