import Foundation
import Testing

/// docs/job-files.md mirrors and §3 attempts (issue 9, items 3 and 10): partial data is kept across
/// mirrors — each attempt starts at the mirror that wrote the `.part` and goes round the list
/// once; another mirror resumes it only if its validator matches the record. An attempt is one
/// try of a download across all its mirrors, and `retry.attempts` counts those.
@Suite("Mirrors keep partial data; attempts span the mirrors, end to end")
struct MirrorResumeTests {
    static let mebibyte = 1_048_576
    static let body = TestHTTPServer.randomBytes(3 * mebibyte, seed: 9_700)
    /// Nothing listens on port 1 of the loopback: connection refused.
    static func refused(_ path: String) -> String { "http://127.0.0.1:1" + path }

    enum Down: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case refused = "connection refused"
        case unavailable = "503 every time"
        case missing = "404 every time (the file is not there)"
        var testDescription: String { rawValue }
    }

    /// A mirror that is down the way `down` says: its URL (and the server, kept alive by the caller).
    static func downMirror(_ down: Down, path: String) throws -> (url: String, server: TestHTTPServer?) {
        switch down {
        case .refused:
            return (refused(path), nil)
        case .unavailable:
            let server = try TestHTTPServer(host: "127.0.0.3")
            server.setFaults(path, [.status(code: 503)])
            return (server.url(path), server)
        case .missing:
            let server = try TestHTTPServer(host: "127.0.0.3")
            return (server.url(path), server)
        }
    }

    /// The start of the first ranged request in `requests`, if any.
    static func firstRange(_ requests: some Sequence<TestHTTPServer.LoggedRequest>) -> Int? {
        requests.lazy.compactMap { rangeStart($0.header("Range")) }.first
    }

    /// `near` 1 MiB: what was received, or a little less if only synced data is trusted.
    static func isNearCut(_ start: Int?) -> Bool {
        start.map { $0 > 0 && $0 <= mebibyte && $0 >= mebibyte - 256 * 1024 } ?? false
    }

    @Test("mirror 0 down, mirror 1 drops after 1 MiB: the next request to mirror 1 resumes near 1 MiB; done, 2 attempts",
          arguments: Down.allCases)
    func retryResumesOnTheMirrorThatWroteThePart(_ down: Down) throws {
        let (url0, keep) = try Self.downMirror(down, path: "/m0/big.bin")
        let mirror1 = try TestHTTPServer(host: "127.0.0.2")
        mirror1.serve("/m1/big.bin", body: Self.body, faults: [.times(1, .dropAfter(bytes: Self.mebibyte))])
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 200ms, max_delay: 500ms }")
        try fixture.dropSettled("big.url", url0 + "\t" + mirror1.url("/m1/big.bin") + "\n  out=big.bin\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "\(once)")
        withExtendedLifetime(keep) {}

        let requests = mirror1.completedRequests()
        try #require(requests.count >= 2, "\(requests)\n\(fixture.logTail())")
        #expect(requests[0].header("Range") == nil && requests[0].bodyBytesSent == Self.mebibyte)
        let next = rangeStart(requests[1].header("Range"))
        #expect(Self.isNearCut(next), "mirror 1's second request had Range \(requests[1].header("Range") ?? "none")")
        #expect(requests.count == 2, "\(requests)")
        expectDone(fixture, "big.url", body: Self.body)
        let status = fixture.statusObject("done", "big.url")
        #expect(StatusFields.int(StatusFields.firstDownload(status)["resumed_from"]) == next.map(Int64.init))
        #expect(StatusFields.int(status?["attempts"]) == 2, "attempt 1: mirror 0, then mirror 1 cut; attempt 2: mirror 1")
    }

    @Test("mirror 0 drops after 1 MiB, mirror 1 serves the same file (same ETag): it resumes the .part near 1 MiB")
    func anotherMirrorWithTheSameValidatorResumes() throws {
        let mirror0 = try ScriptedHTTPServer { head, number in
            number == 0 ? .file(Self.body, etag: "\"same\"", range: head.header("Range"), dropAfter: Self.mebibyte)
                        : .init(status: 503, headers: [("Content-Type", "text/html")], body: Array("busy".utf8))
        }
        let mirror1 = try TestHTTPServer(host: "127.0.0.2")
        mirror1.serve("/m1/big.bin", body: Self.body, etag: "\"same\"")
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 200ms, max_delay: 500ms }")
        try fixture.dropSettled("big.url", mirror0.url("/m0/big.bin") + "\t" + mirror1.url("/m1/big.bin") + "\n  out=big.bin\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "\(once)")

        let onMirror1 = mirror1.completedRequests()
        try #require(!onMirror1.isEmpty, "mirror 1 was never asked\n\(fixture.logTail())")
        #expect(Self.isNearCut(rangeStart(onMirror1[0].header("Range"))),
                "mirror 1's first request had Range \(onMirror1[0].header("Range") ?? "none"), not near \(Self.mebibyte)")
        #expect(onMirror1[0].header("If-Range") == "\"same\"", "a resume on another mirror must be proved by the record's validator")
        #expect(onMirror1[0].status == 206)
        expectDone(fixture, "big.url", body: Self.body)
    }

    @Test("mirror 0 drops after 1 MiB, mirror 1 has another version (another ETag): mirror 1's file in full, never a splice")
    func anotherMirrorWithAnotherValidatorStartsOver() throws {
        let other = TestHTTPServer.randomBytes(3 * Self.mebibyte, seed: 9_701)
        let mirror0 = try ScriptedHTTPServer { head, number in
            number == 0 ? .file(Self.body, etag: "\"v1\"", range: head.header("Range"), dropAfter: Self.mebibyte)
                        : .init(status: 503, headers: [("Content-Type", "text/html")], body: Array("busy".utf8))
        }
        let mirror1 = try TestHTTPServer(host: "127.0.0.2")
        mirror1.serve("/m1/big.bin", body: other, etag: "\"v2\"")
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 200ms, max_delay: 500ms }")
        try fixture.dropSettled("big.url", mirror0.url("/m0/big.bin") + "\t" + mirror1.url("/m1/big.bin") + "\n  out=big.bin\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "\(once)")
        expectDone(fixture, "big.url", body: other)
        #expect(StatusFields.int(StatusFields.firstDownload(fixture.statusObject("done", "big.url"))["resumed_from"]) == 0)
    }

    @Test("five mirrors, the first refuses once (503), the others are down; attempts: 3 → retried, done, attempts 2",
          arguments: Down.allCases)
    func fiveMirrorsFirstRefusesOnce(_ down: Down) throws {
        let first = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(50_000, seed: 9_702)
        first.serve("/m0/five.bin", body: body, faults: [.times(1, .status(code: 503))])
        var urls = [first.url("/m0/five.bin")]
        var keep: [TestHTTPServer] = []
        for index in 1...4 {
            let (url, server) = try Self.downMirror(down, path: "/m\(index)/five.bin")
            urls.append(url)
            if let server { keep.append(server) }
        }
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 1s, max_delay: 1s }")
        try fixture.dropSettled("five.url", urls.joined(separator: "\t") + "\n  out=five.bin\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "\(once)")
        #expect(first.completedRequests().map(\.status) == [503, 200], "the first mirror is tried again by the second attempt")
        for server in keep { #expect(server.completedRequests().count == 1, "each other mirror is tried once, in the first attempt") }
        expectDone(fixture, "five.url", body: body)
        #expect(StatusFields.int(fixture.statusObject("done", "five.url")?["attempts"]) == 2)
    }

    @Test("five mirrors all down with attempts: 3 → failed after exactly 3 rounds of the mirrors, attempts 3")
    func fiveMirrorsAllDown() throws {
        let first = try TestHTTPServer()
        first.setFaults("/m0/gone.bin", [.status(code: 503)])
        let urls = [first.url("/m0/gone.bin")] + (1...4).map { Self.refused("/m\($0)/gone.bin") }
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: "{ attempts: 3, initial_delay: 200ms, max_delay: 300ms }")
        try fixture.dropSettled("gone.url", urls.joined(separator: "\t") + "\n  out=gone.bin\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(1), "\(once)")
        #expect(fixture.jobs(in: "failed") == ["gone.url"])
        #expect(first.completedRequests().count == 3, "mirror 0 is tried once per attempt: \(first.completedRequests())")
        #expect(StatusFields.int(fixture.statusObject("failed", "gone.url")?["attempts"]) == 3)
    }
}
