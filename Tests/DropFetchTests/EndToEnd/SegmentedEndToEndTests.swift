import DropFetch
import Foundation
import Testing

/// Issue 26 with the real binary: one file over several connections against the test server,
/// checked on disk (sha256), in the status files and in the server's request log.
@Suite("Segmented downloads, end to end")
struct SegmentedEndToEndTests {
    static let mib = 1 << 20

    /// A spool whose config lets a download use 8 connections of pieces from 1 MiB.
    private func fixture(_ extra: String = "concurrency: { total: 8, per_host: 8 }\n") throws -> SpoolFixture {
        try SpoolFixture(extraConfig: "split: { connections: 8, min_size: 1MiB }\n" + extra)
    }

    /// The inclusive bounds of a request's `Range: bytes=a-b`, nil without one (or open-ended).
    static func bounds(_ request: TestHTTPServer.LoggedRequest) -> (first: Int, last: Int)? {
        guard let range = request.header("range"), range.hasPrefix("bytes=") else { return nil }
        let parts = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int(parts[0]), let last = Int(parts[1]) else { return nil }
        return (first, last)
    }

    @Test("split=8: the first request, then pieces front to back whose ranges tile the file; sha256 right on disk and in the status file, connections 8 while running")
    func eightSegments() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(24 * Self.mib, seed: 2601)
        server.serve("/f.bin", body: body, faults: [.drip(bytesPerChunk: 32 << 10, interval: .milliseconds(20))])
        let fixture = try fixture()
        try fixture.drop("f.url", server.url("/f.bin") + "\n  split=8\n")
        let agent = try AgentProcess(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture)
        try agent.start()
        var most = 0
        _ = try waitUntil(timeout: .seconds(20), interval: .milliseconds(50)) {
            most = max(most, fixture.runningEntry("f.url")?["connections"] as? Int ?? 0)
            return most == 8 || !(agent.isRunning)
        }
        #expect(try agent.wait(timeout: .seconds(60)) == .exited(0), "\(fixture.log)")
        #expect(most == 8, "the state file showed at most \(most) connections")
        let onDisk = try #require(fixture.downloaded("f.bin").map(TestHTTPServer.sha256Hex))
        #expect(onDisk == TestHTTPServer.sha256Hex(body))
        let status = try fixture.status("done", "f.url")
        #expect(status.state == .done && status.downloads[0].sha256 == onDisk)
        #expect(status.downloads[0].connections == 8, "done/f.status.json says the most connections it had open")

        let requests = server.completedRequests()
        #expect(requests.first.map { $0.header("range") == nil } == true)
        // 24 MiB on 8 connections with 1 MiB pieces at least: rounds of 8 equal pieces front to back
        // (issue 36), 2 of 1.5 MiB once the first connection wrote a byte before the split; the
        // first connection keeps [0, its piece's end); no gap, no overlap.
        let ranges = requests.compactMap(Self.bounds).sorted { $0.first < $1.first }
        #expect(ranges.count >= 15 && requests.count == ranges.count + 1, "\(requests.map { $0.header("range") ?? "whole" })")
        for (range, next) in zip(ranges, ranges.dropFirst()) { #expect(range.last + 1 == next.first) }
        #expect(ranges.last?.last == body.count - 1)
        for request in requests.dropFirst() {
            let range = try #require(Self.bounds(request))
            #expect(request.status == 206 && request.bodyBytesSent == range.last - range.first + 1)
            #expect(request.header("if-range") == "\"v1\"")
            #expect(range.last - range.first + 1 >= Self.mib && range.last - range.first + 1 < 2 * Self.mib)
        }
    }

    @Test("pieces fail mid-way (the server drops 3 connections): their rest is asked for from where each stopped, sha256 right on disk and in the status file")
    func failedPiecesRefetched() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(12 * Self.mib, seed: 2607)
        server.serve("/d.bin", body: body, faults: [.drip(bytesPerChunk: 32 << 10, interval: .milliseconds(20)),
                                                     .times(3, .dropAfter(bytes: 300_000))])
        let fixture = try fixture()
        try fixture.drop("d.url", server.url("/d.bin") + "\n  split=8\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let onDisk = try #require(fixture.downloaded("d.bin").map(TestHTTPServer.sha256Hex))
        #expect(onDisk == TestHTTPServer.sha256Hex(body))
        let status = try fixture.status("done", "d.url")
        #expect(status.state == .done && status.downloads[0].sha256 == onDisk)
        #expect(status.attempts == 1, "the failed pieces cost no attempt: \(status.attempts)")

        let requests = server.completedRequests()
        let dropped = requests.prefix(3).compactMap(Self.bounds).filter { $0.last - $0.first + 1 > 300_000 }
        #expect(!dropped.isEmpty, "\(requests)")
        for piece in dropped {
            // The rest of the piece fetched again from where it stopped: after the 300,000 bytes
            // sent, or a little before when its piece map held less (under TSan the agent resumed
            // 16 KiB early once), never from the piece's start.
            #expect(requests.contains { request in
                guard let range = Self.bounds(request) else { return false }
                return range.first > piece.first + 200_000 && range.first <= piece.first + 300_000 && range.last == piece.last
            }, "\(piece) not resumed: \(requests)")
        }
        #expect(!fixture.log.contains("starting over on one connection"), "\(fixture.log)")
    }

    @Test("kill -9 after the piece map was recorded, then run --once: only missing pieces are asked for, sha256 right")
    func killThenResumePieces() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(16 * Self.mib, seed: 2602)
        server.serve("/k.bin", body: body, faults: [.drip(bytesPerChunk: 16 << 10, interval: .milliseconds(25))])
        let fixture = try fixture()
        try fixture.drop("k.url", server.url("/k.bin") + "\n  split=8\n")
        let ending = try AgentProcess.run(["run", "--once"], config: fixture.configPath,
                                          environment: ["DROPFETCH_CRASH_AT": "pieces-recorded:1"], log: fixture.logPath, in: fixture)
        #expect(ending == .signalled(SIGKILL), "\(fixture.log)")
        let before = server.completedRequests().count
        let recordPath = fixture.destination + "/.k.bin.part.json"
        let record = try #require(FileManager.default.contents(atPath: recordPath))
        let object = try #require(try JSONSerialization.jsonObject(with: record) as? [String: Any])
        let pieces = try #require(object["pieces"] as? [[Int]])
        let done = pieces.map { ($0[0], $0[1]) }
        #expect(!done.isEmpty && done.reduce(0) { $0 + $1.1 - $1.0 } < body.count)
        #expect(done.count > 1, "the pieces should have holes between them: \(done)")

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let onDisk = try #require(fixture.downloaded("k.bin").map(TestHTTPServer.sha256Hex))
        #expect(onDisk == TestHTTPServer.sha256Hex(body))
        // The digest of the resumed run covers the pieces of the killed one: it was computed from disk.
        #expect(try fixture.status("done", "k.url").downloads[0].sha256 == onDisk)
        let later = Array(server.completedRequests().dropFirst(before))
        #expect(!later.isEmpty)
        for request in later {
            let range = try #require(Self.bounds(request), "an unbounded request after the kill: \(request)")
            let overlaps = done.filter { $0.0 <= range.last && range.first < $0.1 }
            #expect(overlaps.isEmpty, "asked again for recorded bytes: \(range) overlaps \(overlaps)")
        }
        #expect(fixture.log.contains("resuming the missing pieces"))
    }

    @Test("the file changes on the server between segments: the segments stop, the download starts over and the file is the new one whole")
    func changedFileNeverSpliced() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8 * Self.mib, seed: 2603)
        let changed = TestHTTPServer.randomBytes(8 * Self.mib, seed: 2604)
        server.serve("/c.bin", body: body, faults: [
            .times(1, .drip(bytesPerChunk: 32 << 10, interval: .milliseconds(20))),
            .changeETagAfterFirstRequest(to: "\"v2\"", body: changed),
        ])
        let fixture = try fixture()
        try fixture.drop("c.url", server.url("/c.bin") + "\n  split=8\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let file = try #require(fixture.downloaded("c.bin"))
        #expect(TestHTTPServer.sha256Hex(file) == TestHTTPServer.sha256Hex(changed), "a spliced or old file")
        #expect(try fixture.status("done", "c.url").downloads[0].sha256 == TestHTTPServer.sha256Hex(changed))
        #expect(fixture.log.contains("starting over on one connection"), "\(fixture.log)")
        // After the refusal: one request from zero, no range; every segment asked for the first version.
        let requests = server.completedRequests()
        let seen = requests.map { "\($0.header("range") ?? "whole") \($0.status) \($0.bodyBytesSent)" }
        let whole = requests.filter { $0.header("range") == nil }
        #expect(whole.count == 2, "\(seen)")
        #expect(whole.last.map { $0.status == 200 && $0.bodyBytesSent == changed.count } == true, "\(seen)")
        #expect(requests.filter { $0.header("range") != nil }.allSatisfy { $0.header("if-range") == "\"v1\"" }, "\(seen)")
    }

    @Test("a server that answers ranges with 200: the download finishes on one connection, file right")
    func rangesAnsweredWhole() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8 * Self.mib, seed: 2605)
        server.serve("/w.bin", body: body, faults: [.ignoreRange, .times(1, .drip(bytesPerChunk: 32 << 10, interval: .milliseconds(20)))])
        let fixture = try fixture()
        try fixture.drop("w.url", server.url("/w.bin") + "\n  split=8\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.downloaded("w.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let requests = server.completedRequests()
        let whole = requests.filter { $0.header("range") == nil }
        #expect(whole.count == 2, "the first try and the restart: \(requests)")
        #expect(whole.last.map { $0.bodyBytesSent == body.count } == true)
        // Once refused, the download is never split again: a split after the restart would be
        // refused too and start over a second time (a third whole request). Not judged by the order
        // the server logged the heads in: a ranged request the agent gave up at the refusal can
        // reach the server's parser after the restart's head, which goes over a warm connection.
        #expect(fixture.log.components(separatedBy: "starting over on one connection").count == 2, "\(fixture.log)")
    }

    @Test("per_host: 2 with split=8: never more than 2 connections to the host, the download did split, the log says why 2")
    func perHostCountsConnections() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8 * Self.mib, seed: 2606)
        server.serve("/h.bin", body: body, faults: [.drip(bytesPerChunk: 32 << 10, interval: .milliseconds(20))])
        let fixture = try fixture("concurrency: { total: 8, per_host: 2 }\n")
        try fixture.drop("h.url", server.url("/h.bin") + "\n  split=8\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.downloaded("h.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.maxConcurrentRequests == 2, "peak \(server.maxConcurrentRequests)")
        #expect(server.completedRequests().contains { $0.header("range") != nil })
        // The cap and its cause are in the log (issue 36, rough edge 5).
        let capped = fixture.log.split(separator: "\n").first { $0.contains("split capped") } ?? ""
        #expect(capped.contains("connections=2") && capped.contains("asked=8")
                && capped.contains("concurrency.per_host 2"), "\(fixture.log)")
    }

    @Test("per_host: 2, a split download started beside another job to the host gains its second connection when that job ends")
    func splitGrowsWhenRoomFrees() throws {
        let server = try TestHTTPServer()
        let big = TestHTTPServer.randomBytes(8 * Self.mib, seed: 3604)
        let small = TestHTTPServer.randomBytes(3 * Self.mib / 2, seed: 3605)
        let drip = TestHTTPServer.Fault.drip(bytesPerChunk: 32 << 10, interval: .milliseconds(20))
        // The big file's first answer comes once the small one runs: no place is free to split it.
        server.serve("/big.bin", body: big, faults: [.times(1, .delay(.milliseconds(400))), drip])
        server.serve("/small.bin", body: small, faults: [drip])
        let fixture = try SpoolFixture(extraConfig: "split: { connections: 2, min_size: 1MiB }\nconcurrency: { total: 8, per_host: 2 }\n")
        try fixture.drop("big.url", server.url("/big.bin") + "\n")
        try fixture.drop("small.url", server.url("/small.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")

        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(big))
        #expect(fixture.downloaded("small.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(small))
        #expect(try fixture.status("done", "big.url").downloads[0].connections == 2, "\(fixture.log)")
        #expect(try fixture.status("done", "small.url").downloads[0].connections == 1)
        let requests = server.completedRequests()
        // Seen once at 3 in a full `make test` (not alone in 6 runs): the requests, timed from the
        // first, and the log say which three.
        let first = requests.map(\.received).min()
        let timeline = requests.map { request in
            let times = first.map { start in
                "at \(request.received - start), done \(request.finished.map { "\($0 - start)" } ?? "never")"
            } ?? ""
            return "\(request) range \(request.header("range") ?? "-") \(times)"
        }
        #expect(server.maxConcurrentRequests == 2,
                "peak \(server.maxConcurrentRequests): \(timeline.joined(separator: "; "))\n\(fixture.log)")
        let smallEnd = try #require(requests.first { $0.path == "/small.bin" }?.finished)
        let segment = try #require(requests.first { $0.path == "/big.bin" && $0.header("range") != nil }, "never split")
        // Split once the small job's connection was free, within about a second (a loaded CI box: 2 s).
        #expect(segment.received > smallEnd - .milliseconds(100), "split before a place was free")
        #expect(segment.received - smallEnd < .seconds(2), "split \(segment.received - smallEnd) after the place freed")
        #expect(fixture.log.contains("split download gained connections") || fixture.log.contains("download split"))
    }

    /// Where a rate limit of 800K comes from: the job file, `limits.rate_limit` or the job's class.
    struct RateLimit: Sendable, CustomTestStringConvertible {
        let name: String
        let jobLine: String
        let config: String
        let folder: String
        var testDescription: String { name }
    }

    static let rateLimits = [
        RateLimit(name: "max-download-limit=800K", jobLine: "  max-download-limit=800K\n", config: "", folder: ""),
        RateLimit(name: "limits.rate_limit 800K", jobLine: "", config: "limits: { rate_limit: 800K }\n", folder: ""),
        RateLimit(name: "a class's rate_limit 800K", jobLine: "",
                  config: "classes:\n  - name: slow\n    match: { folder: slow }\n    rate_limit: 800K\n", folder: "slow"),
    ]

    @Test("a rate limit holds on the sum of a split download's connections: 4 MiB at 800K in 4–7.5 s over more than one connection",
          arguments: rateLimits)
    func rateLimitOnTheSum(_ limit: RateLimit) throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(4 * Self.mib, seed: 2607)
        server.serve("/r.bin", body: body)
        let fixture = try fixture("concurrency: { total: 8, per_host: 8 }\n" + limit.config)
        try fixture.drop("r.url", server.url("/r.bin") + "\n  split=4\n" + limit.jobLine, folder: limit.folder)
        let start = ContinuousClock.now
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let (seconds, fraction) = (ContinuousClock.now - start).components
        let elapsed = Double(seconds) + Double(fraction) / 1e18
        // 4 MiB at 800 KiB/s is 5.1 s: the limit holds the sum within about ±15%, wider for a busy machine.
        #expect((4.0...7.5).contains(elapsed), "took \(elapsed) s")
        #expect(fixture.downloaded("r.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.maxConcurrentRequests >= 2, "never split: peak \(server.maxConcurrentRequests)")
    }

    /// The pieces `[start, end)` the resume record of `part` names, and the ones it counts as synced.
    private func recordedPieces(_ part: String) -> (written: [(Int, Int)], synced: [(Int, Int)]) {
        guard let data = FileManager.default.contents(atPath: part + ".json"),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return ([], []) }
        func ranges(_ key: String) -> [(Int, Int)] { (object[key] as? [[Int]] ?? []).map { ($0[0], $0[1]) } }
        return (ranges("pieces"), ranges("syncedPieces"))
    }

    /// Requests after the first `count` that ask again for a byte of `pieces`.
    private func askedAgain(_ server: TestHTTPServer, after count: Int, _ pieces: [(Int, Int)], size: Int) -> [String] {
        server.completedRequests().dropFirst(count).compactMap { request in
            let (first, last) = SegmentCrashMatrixTests.asked(request, size: size)
            let overlaps = pieces.filter { $0.0 <= last && first < $0.1 }
            return overlaps.isEmpty ? nil : "\(request.header("range") ?? "whole") overlaps \(overlaps)"
        }
    }

    @Test("hold and release, then SIGTERM and a new run, mid-split: the record keeps the pieces, each restart asks only for the rest")
    func holdAndShutdownKeepPieces() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(16 * Self.mib, seed: 2608)
        server.serve("/p.bin", body: body, faults: [.drip(bytesPerChunk: 16 << 10, interval: .milliseconds(40))])
        let fixture = try SpoolFixture()
        let config = try fixture.writeAgentConfig(agentID: "test-agent", "split: { connections: 8, min_size: 1MiB }\nconcurrency: { total: 8, per_host: 8 }\n")
        let agent = try AgentProcess(["run"], config: config, log: fixture.logPath, in: fixture)
        try agent.start()
        try fixture.drop("p.url", server.url("/p.bin") + "\n  split=8\n")
        let part = fixture.partPath("p.bin")

        #expect(try waitUntil(timeout: .seconds(10)) { (fixture.runningEntry("p.url")?["connections"] as? Int ?? 0) > 1 }, "\(fixture.logTail())")
        #expect(try fixture.runCLI(["hold", "p"], config: config) == 0)
        #expect(try waitUntil { server.requests(to: "/p.bin").allSatisfy(\.isFinished) })
        let held = recordedPieces(part)
        #expect(held.written.count > 1, "no pieces with holes recorded at the hold: \(held.written)")
        let beforeRelease = server.completedRequests().count
        #expect(try fixture.runCLI(["release", "p"], config: config) == 0)

        // Split again: more than one request of the resumed download in flight.
        #expect(try waitUntil(timeout: .seconds(10)) {
            server.requests.dropFirst(beforeRelease).filter { !$0.isFinished }.count > 1
        }, "\(fixture.logTail())")
        #expect(try agent.stop() == .exited(0), "\(fixture.logTail())")
        let stopped = recordedPieces(part)
        #expect(!stopped.written.isEmpty && stopped.synced.count == stopped.written.count, "a shutdown syncs every piece: \(stopped)\n\(fixture.log)")
        let beforeRestart = server.completedRequests().count
        #expect(askedAgain(server, after: beforeRelease, held.written, size: body.count).isEmpty)

        #expect(try AgentProcess.run(["run", "--once"], config: config, log: fixture.logPath, in: fixture) == .exited(0),
                "\(fixture.logTail())")
        #expect(fixture.downloaded("p.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(askedAgain(server, after: beforeRestart, stopped.written, size: body.count).isEmpty)
        #expect(try fixture.status("done", "p.url").attempts == 1)
    }
}
