@testable import DropFetch
import Foundation
import Logging
import Testing

/// The agent driven in this process on a clock the test sets (issue 34): what it files, and
/// that every time it writes into a record is the clock's, not the machine's.
@Suite("Agent in process")
struct AgentInProcessTests {
    /// 2030-01-01T00:00:00Z: later than any inbox file's time, so every job has settled.
    private static let wall: Int64 = 1_893_456_000

    @Test("run --once on a test clock: a good job in done/ with its bytes, a bad one in failed/, both at the clock's time")
    func onceOnInjectedClock() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(70_000, seed: 34)
        server.serve("/f/a.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.drop("a.url", "\(server.url("/f/a.bin"))\n")
        try fixture.drop("bad.url", "this is not a URL\n")
        let config = try ConfigLoader.load(path: fixture.configPath)
        let clock = AgentClock(monotonic: 7_000_000_000, wall: Self.wall * 1_000_000_000)
        let agent = try Agent(config: config, options: Agent.Options(once: true), logger: Logger(label: "in-process"),
                              clock: clock)

        #expect(agent.run() == .failed, "one job failed: exit 1")

        #expect(fixture.jobs(in: "done") == ["a.url"])
        #expect(fixture.jobs(in: "failed") == ["bad.url"])
        #expect(fixture.downloaded("a.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let done = try fixture.status("done", "a.url")
        #expect(done.started == "2030-01-01T00:00:00Z" && done.finished == "2030-01-01T00:00:00Z")
        #expect(done.downloads.first?.sha256 == TestHTTPServer.sha256Hex(body))
        let failed = try fixture.status("failed", "bad.url")
        #expect(failed.finished == "2030-01-01T00:00:00Z" && failed.error?.kind == .invalidJob)
        #expect(server.requests(to: "/f/a.bin").count == 1)
    }
}
