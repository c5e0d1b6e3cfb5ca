import DropFetch
import Foundation
import Testing

/// Two downloads of one job that resolve to one file name (docs/job-files.md): each gets its own
/// file, never the other's.
@Suite("Same name twice in one job, end to end")
struct SameNameInOneJobTests {
    @Test("two URLs of one job with one file name, fetched one after the other (per_host 1): two files, each with its own bytes")
    func oneAfterTheOther() throws {
        let server = try TestHTTPServer()
        let first = TestHTTPServer.randomBytes(30_000, seed: 351), second = TestHTTPServer.randomBytes(40_000, seed: 352)
        server.serve("/a/same.bin", body: first)
        server.serve("/b/same.bin", body: second)
        let fixture = try SpoolFixture(extraConfig: "concurrency: { total: 1, per_host: 1 }\n")
        try fixture.drop("twice.url", server.url("/a/same.bin") + "\n" + server.url("/b/same.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")

        let status = try fixture.status("done", "twice.url")
        let files = status.downloads.compactMap(\.file)
        #expect(Set(files).count == 2, "\(files)")
        #expect(server.completedRequests().map(\.path).sorted() == ["/a/same.bin", "/b/same.bin"])
        let hashes = Set(files.compactMap { TestHTTPServer.sha256Hex(ofFileAt: $0) })
        #expect(hashes == [TestHTTPServer.sha256Hex(first), TestHTTPServer.sha256Hex(second)], "\(files)")
        #expect(status.downloads.map(\.sha256) == [TestHTTPServer.sha256Hex(first), TestHTTPServer.sha256Hex(second)])
    }

    @Test("two URLs of one job with one file name, both cut after 10,000 bytes, agent killed (-9) while both wait for their retry; run --once resumes each from its own part (Range: bytes=10000-)")
    func bothResumeTheirOwnParts() throws {
        let server = try TestHTTPServer()
        let first = TestHTTPServer.randomBytes(30_000, seed: 353), second = TestHTTPServer.randomBytes(40_000, seed: 354)
        server.serve("/a/same.bin", body: first, faults: [.times(1, .dropAfter(bytes: 10_000))])
        server.serve("/b/same.bin", body: second, faults: [.times(1, .dropAfter(bytes: 10_000))])
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 4s, max_delay: 4s }",
                                                  "concurrency: { total: 4, per_host: 4 }\n")
        let daemon = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try daemon.start()
        try fixture.drop("twice.url", server.url("/a/same.bin") + "\n" + server.url("/b/same.bin") + "\n")
        // Both wait for their retry, each with 10,000 bytes in its own part.
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(10)) {
            ["/a/same.bin", "/b/same.bin"].allSatisfy { server.requests(to: $0).first?.isFinished == true }
                && [".same.bin.part", ".same.1.bin.part"].allSatisfy { fixture.fileSize(fixture.destination + "/" + $0) == 10_000 }
                && fixture.log.components(separatedBy: "retry_in=").count >= 3
        }, "\(fixture.logTail())")
        #expect(daemon.kill() == .signalled(SIGKILL))
        #expect(server.requests(to: "/a/same.bin").count == 1 && server.requests(to: "/b/same.bin").count == 1,
                "a retry came before the kill: the case was not exercised")
        let parts = (try? FileManager.default.contentsOfDirectory(atPath: fixture.destination))?.filter { $0.hasSuffix(".part") }.sorted()
        #expect(parts == [".same.1.bin.part", ".same.bin.part"], "\(parts ?? [])")

        let once = try AgentProcess.run(["run", "--once"], config: config, log: fixture.logPath, in: fixture, timeout: .seconds(40))
        #expect(once == .exited(0), "\(fixture.logTail())")
        let status = try fixture.status("done", "twice.url")
        let files = status.downloads.compactMap(\.file)
        #expect(Set(files).count == 2, "\(files)")
        #expect(status.downloads.map(\.sha256) == [TestHTTPServer.sha256Hex(first), TestHTTPServer.sha256Hex(second)])
        for (index, file) in files.enumerated() {
            #expect(TestHTTPServer.sha256Hex(ofFileAt: file) == status.downloads[index].sha256)
        }
        for path in ["/a/same.bin", "/b/same.bin"] {
            #expect(server.requests(to: path).map { $0.header("Range") } == [nil, "bytes=10000-"], "\(path)")
        }
        #expect(status.downloads.map(\.resumedFrom) == [10_000, 10_000])
    }
}
