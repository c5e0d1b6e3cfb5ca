import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 25, item 7: `run --once` never waits past `once_wait` for free space, even when every
/// no_space retry falls due within `once_wait` (retry.max_delay shorter than it).
@Suite("run --once and a full disk, end to end", .serialized,
       .enabled(if: getuid() == 0, "mounting a tmpfs as the destination needs root (mount(2))"))
struct OnceNoSpaceTests {
    @Test("a 3 MB download into a 2 MB tmpfs, max_delay 1s, once_wait 3s: exit 75 within seconds, job left in work/")
    func onceGivesUpWaitingForSpace() throws {
        let server = try TestHTTPServer()
        server.serve("/big.bin", body: TestHTTPServer.randomBytes(3_000_000, seed: 25_701))
        let fixture = try SpoolFixture(extraConfig: "once_wait: 3s\n")
        let disk = try TmpfsMount(at: fixture.destination, size: "2m")
        defer { disk.unmount(); withExtendedLifetime(fixture) {} }
        try fixture.drop("big.url", server.url("/big.bin") + "\n")

        let started = Date()
        #expect(try fixture.runOnce(timeout: 40) == 75, "\(fixture.logTail())")
        let took = Date().timeIntervalSince(started)

        #expect(took < 15, "once_wait is 3 s; the run took \(took) s")
        #expect(server.requests(to: "/big.bin").count >= 2, "it did wait and retry within once_wait")
        #expect(fixture.jobs(in: "work/test-agent") == ["big.url"])
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.log.contains("left waiting for the next run"), "\(fixture.logTail())")
        let state = try #require(fixture.stateJSON("big.url"))
        #expect(state["state"] as? String == "waiting")
        #expect(StatusFields.errorKind(StatusFields.firstDownload(state)) == "no_space", "\(state)")
    }
}
