import DropFetch
import Foundation
import Glibc
import Testing

/// `kill -9` at crash points inside a download split over 8 connections (issue 26), then a clean
/// `run --once`: invariants 1–5 hold, the file is whole, and no later request asks again for bytes
/// the resume record vouched for when the agent died.
@Suite("Crash matrix, segmented downloads", .serialized)
struct SegmentCrashMatrixTests {
    static let cases: [CrashMatrixTests.CrashCase] = [
        .init("mid-transfer:1"), .init("mid-segment:1"), .init("mid-segment:40"), .init("mid-segment:200"),
        .init("pieces-recorded:1"), .init("pieces-recorded:3"),
        .init("mid-segment:120", "mid-segment:60"), .init("pieces-recorded:2", "recovery:1"),
        .init("data-complete:1"), .init("published:1"), .init("status-written:1"),
    ]

    static let mib = 1 << 20

    /// The byte ranges `[start, end)` of `part` a restart may resume, as its record vouches for
    /// them: the trusted pieces of a split download (all written ones on this boot, else the synced
    /// ones), or the prefix a one-connection record counts (CrashSnapshot.resumableBytes).
    static func vouched(part: String) -> [(Int, Int)] {
        guard let data = FileManager.default.contents(atPath: part + ".json"),
              let record = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              record["etag"] != nil || record["lastModified"] != nil else { return [] }
        let size = (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? Int) ?? 0
        if let pieces = record["pieces"] as? [[Int]] {
            let sameBoot = (record["boot"] as? String) == CrashSnapshot.bootID
            let trusted = sameBoot ? pieces : (record["syncedPieces"] as? [[Int]] ?? [])
            return trusted.map { ($0[0], min($0[1], size)) }.filter { $0.0 < $0.1 }
        }
        return CrashSnapshot.resumableBytes(part: part, size: size).map { [(0, $0)] } ?? []
    }

    /// A request's range as `[first, last]`; an open-ended one runs to the file's end, none is the whole file.
    static func asked(_ request: TestHTTPServer.LoggedRequest, size: Int) -> (Int, Int) {
        guard let range = request.header("range"), range.hasPrefix("bytes=") else { return (0, size - 1) }
        let parts = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        return (Int(parts.first ?? "") ?? 0, parts.count > 1 ? Int(parts[1]) ?? size - 1 : size - 1)
    }

    @Test("kill -9 inside a split download, then run --once: file whole, job done once, no vouched byte fetched again",
          arguments: cases)
    func crashThenFinish(_ crash: CrashMatrixTests.CrashCase) throws {
        let server = try TestHTTPServer()
        let big = TestHTTPServer.randomBytes(12 * Self.mib, seed: 2690)
        let small = TestHTTPServer.randomBytes(40_000, seed: 2691)
        server.serve("/s/big.bin", body: big, faults: [.drip(bytesPerChunk: 16 << 10, interval: .milliseconds(40))])
        server.serve("/s/small.bin", body: small)
        let jobs = [
            SpoolAudit.ExpectedJob(name: "big.url", path: "/s/big.bin", file: "big.bin", body: big),
            SpoolAudit.ExpectedJob(name: "small.url", path: "/s/small.bin", file: "small.bin", body: small),
        ]
        let fixture = try SpoolFixture(extraConfig: """
            split: { connections: 8, min_size: 1MiB }
            concurrency: { total: 10, per_host: 10 }

            """)
        try fixture.drop("big.url", server.url("/s/big.bin") + "\n  split=8\n")
        try fixture.drop("small.url", server.url("/s/small.bin") + "\n")
        let audit = SpoolAudit(fixture: fixture)
        let part = fixture.destination + "/.big.bin.part"
        var crashes: [(point: String, requests: Int, vouched: [(Int, Int)])] = []

        for point in crash.points {
            let ending = try AgentProcess.run(["run", "--once"], config: fixture.configPath,
                                              environment: ["DROPFETCH_CRASH_AT": point], log: fixture.logPath, in: fixture)
            #expect(ending == .signalled(SIGKILL), "\(point): the run was not killed there\n\(fixture.log)")
            var checked = Set<String>()
            let instant = audit.instantProblems(dropped: jobs, checked: &checked)
            #expect(instant.isEmpty, "after \(point): \(instant)")
            crashes.append((point, server.completedRequests().count, Self.vouched(part: part)))
            if point.hasPrefix("mid-segment") || point.hasPrefix("pieces-recorded") {
                #expect(fixture.log.contains("download split"), "\(point) before the split?\n\(fixture.log)")
            }
        }

        let ending = try AgentProcess.run(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture)
        #expect(ending == .exited(0), "\(fixture.log)")
        let problems = audit.finalProblems(jobs: jobs)
        #expect(problems.isEmpty, "\(problems)\n\(fixture.log)")
        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(big))
        #expect(try fixture.status("done", "big.url").downloads[0].sha256 == TestHTTPServer.sha256Hex(big))

        let log = server.completedRequests()
        for crashed in crashes {
            for request in log.dropFirst(crashed.requests) where request.path == "/s/big.bin" {
                let (first, last) = Self.asked(request, size: big.count)
                let again = crashed.vouched.filter { $0.0 <= last && first < $0.1 }
                #expect(again.isEmpty, "after \(crashed.point): \(request.header("range") ?? "whole") asks again for \(again)")
            }
        }
        print("segment crash matrix \(crash.testDescription): vouched \(crashes.map { $0.vouched.reduce(0) { $0 + $1.1 - $1.0 } }) bytes, \(log.count) requests")
    }
}
