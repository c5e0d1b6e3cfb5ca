import DropFetch
import Foundation
import Testing

/// Issue 25, items 8, 9 and 11 (resume): what a retry does with the data it has. A checksum
/// mismatch fetches again from byte 0 and keeps the last bad data as `.<name>.bad`; an attempt
/// that moved the `.part` forward by a MiB costs none, one that did not still does; a server that
/// ignores the range is logged as a restart from 0.
@Suite("Retries that mean something, end to end")
struct RetryMeaningTests {
    @Test("a checksum mismatch is refetched from 0 (no Range) each time; the last bad data is kept as .c.bin.bad")
    func checksumMismatchRefetches() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(300_000, seed: 25_801)
        server.serve("/c.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.drop("c.url", "\(server.url("/c.bin"))\n  checksum=sha-256=\(String(repeating: "0", count: 64))\n")

        #expect(try fixture.runOnce() == 1)

        let status = try fixture.status("failed", "c.url")
        #expect(status.error?.kind == .checksumMismatch)
        #expect(status.downloads.first?.bytes == 0)
        let requests = server.completedRequests().filter { $0.path == "/c.bin" }
        #expect(requests.count == 3, "retry.attempts is 3: \(requests)")
        #expect(requests.allSatisfy { $0.header("range") == nil && $0.status == 200 && $0.bodyBytesSent == body.count },
                "every try fetched the whole file again: \(requests.map { ($0.header("range") ?? "-", $0.status) })")
        #expect(fixture.destinationNames() == [".c.bin.bad"], "only the kept bad copy, no .part, no record")
        #expect(fixture.downloaded(".c.bin.bad").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(fixture.log.contains("data that failed its checksum kept for inspection"))

        // A second failure of the same name replaces the copy: one per file name.
        try fixture.drop("c2.url", "\(server.url("/c.bin"))\n  checksum=sha-256=\(String(repeating: "1", count: 64))\n  out=c.bin\n")
        #expect(try fixture.runOnce() == 1)
        #expect(fixture.destinationNames() == [".c.bin.bad"])
    }

    @Test("an 8 MB download reset after each 1.2 MB six times is done with retry.attempts 3; 7 requests, resumed")
    func progressCostsNoAttempt() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8_000_000, seed: 25_901)
        server.serve("/flaky.bin", body: body, faults: [.times(6, .dropAfter(bytes: 1_200_000))])
        let fixture = try SpoolFixture()
        try fixture.drop("flaky.url", server.url("/flaky.bin") + "\n")

        #expect(try fixture.runOnce() == 0, "\(fixture.logTail())")

        #expect(fixture.downloaded("flaky.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let requests = server.completedRequests().filter { $0.path == "/flaky.bin" }
        #expect(requests.count == 7, "\(requests)")
        #expect(requests.dropFirst().allSatisfy { $0.status == 206 }, "each retry resumed: \(requests)")
        #expect(try fixture.status("done", "flaky.url").attempts == 7, "every attempt begun is shown")
    }

    @Test("a server that sends 1 byte and resets, for ever, still fails after retry.attempts (3) requests")
    func tinyProgressStillCounts() throws {
        let server = try TestHTTPServer()
        server.serve("/drip.bin", body: TestHTTPServer.randomBytes(3_000_000, seed: 25_902), faults: [.dropAfter(bytes: 1)])
        let fixture = try SpoolFixture()
        try fixture.drop("drip.url", server.url("/drip.bin") + "\n")

        #expect(try fixture.runOnce(timeout: 60) == 1, "\(fixture.logTail())")

        let status = try fixture.status("failed", "drip.url")
        #expect(status.error?.kind == .network)
        #expect(status.attempts == 3)
        #expect(server.completedRequests().filter { $0.path == "/drip.bin" }.count == 3)
    }

    @Test("a 200 answer to a Range request is logged as a restart from 0, and resumed_from is 0")
    func ignoredRangeIsLogged() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_000_000, seed: 25_111)
        server.serve("/r.bin", body: body, faults: [.times(1, .dropAfter(bytes: 400_000)), .ignoreRange])
        let fixture = try SpoolFixture()
        try fixture.drop("r.url", server.url("/r.bin") + "\n")

        #expect(try fixture.runOnce() == 0, "\(fixture.logTail())")

        let requests = server.completedRequests().filter { $0.path == "/r.bin" }
        #expect(requests.count == 2 && requests.last?.header("range") != nil && requests.last?.status == 200, "\(requests)")
        let line = try #require(fixture.log.split(separator: "\n").first { $0.contains("restarted from 0") },
                                "no line says the download started over:\n\(fixture.logTail())")
        #expect(line.contains("job=r.url") && line.contains("requested_from="), "\(line)")
        #expect(try fixture.status("done", "r.url").downloads.first?.resumedFrom == 0)
        #expect(fixture.downloaded("r.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }
}
