import Foundation
import Glibc
import Testing

/// Issue 15: `dropfetch status` for people (aligned tables, speed and ETA, next try and last
/// error) and `status --watch`.
@Suite("Status for people, end to end")
struct StatusCommandTests {
    @Test("status shows speed and ETA of a running download and the waiting job's next try (local time with its offset, absolute on the page) and last error")
    func statusText() throws {
        let server = try TestHTTPServer()
        // About 80 KiB/s for 2 MB: it runs for the whole test.
        server.serve("/long.bin", body: TestHTTPServer.randomBytes(2_000_000, seed: 15_101),
                     faults: [.drip(bytesPerChunk: 8_192, interval: .milliseconds(100))])
        server.setFaults("/later.bin", [.status(code: 503, headers: [("Retry-After", "3600")])])
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        defer { _ = try? fixture.stopDaemon() }
        try fixture.drop("long.url", server.url("/long.bin") + "\n")
        try fixture.drop("later.url", server.url("/later.bin") + "\n")

        // The speed is measured once two samples a second apart exist.
        #expect(try waitUntil(timeout: .seconds(20)) {
            StatusFields.firstDownload(fixture.stateJSON("long.url"))["bytes_per_second"] is NSNumber
                && fixture.stateJSON("later.url")?["state"] as? String == "waiting"
        }, "\(fixture.stateJSON("long.url") ?? [:])\n\(fixture.logTail())")

        // India has no DST and is +05:30: a UTC time in the output cannot pass for local time.
        let result = try fixture.capture(["status"], environment: ["TZ": "Asia/Kolkata"])
        #expect(result.ending == .exited(0), "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let header = try #require(lines.first { $0.contains("JOB") && $0.contains("SPEED") }, "\(result.stdout)")
        let row = try #require(lines.first { $0.contains("long.url") }, "\(result.stdout)")
        // Aligned: the speed and ETA cells sit under their headings.
        let speedColumn = try #require(header.range(of: "SPEED")).upperBound.utf16Offset(in: header)
        let speed = try #require(row.range(of: #"\d+(\.\d)? (B|KiB|MiB)/s"#, options: .regularExpression), "\(row)")
        #expect(row[..<speed.upperBound].count == speedColumn, "speed not aligned under SPEED:\n\(header)\n\(row)")
        #expect(row.range(of: #"\b\d+(m\d\d)?s\b"#, options: .regularExpression) != nil, "no ETA in \(row)")
        #expect(row.contains("1.9 MiB") || row.contains("1.91 MiB"), "the size in MiB: \(row)")
        #expect(row.range(of: #"\b\d{1,2}%"#, options: .regularExpression) != nil, "no percent in \(row)")

        let waiting = try #require(lines.first { $0.contains("later.url") }, "\(result.stdout)")
        let retryAt = try #require(fixture.stateJSON("later.url")?["retry_at"] as? String)
        #expect(retryAt.hasSuffix("Z"), "the state file keeps UTC: \(retryAt)")
        // Where a person reads it: local time with its offset (issue 36).
        let local = try Self.kolkataTime(retryAt)
        #expect(local.hasSuffix("+05:30"))
        #expect(waiting.contains("waiting") && waiting.contains(local + " (in "), "next try not in local time: \(waiting)")
        #expect(!waiting.contains(retryAt), "next try in UTC: \(waiting)")
        #expect(waiting.range(of: #"\(in (59m\d\ds|1h00m)\)"#, options: .regularExpression) != nil, "\(waiting)")
        #expect(waiting.contains("http_status: HTTP 503"), "last error missing: \(waiting)")

        // The page: the same local time, absolute (an idle agent's page is not rewritten, "in 59m" would go stale).
        let page = try fixture.capture(["status", "--html"], environment: ["TZ": "Asia/Kolkata"])
        #expect(page.ending == .exited(0), "\(page)")
        let pageRow = try #require(page.stdout.split(separator: "\n").first { $0.contains("data-job=\"later.url\"") },
                                   "\(page.stdout)")
        #expect(pageRow.contains("<time datetime=\"\(retryAt)\">\(local)</time>"), "\(pageRow)")
        #expect(!pageRow.contains("(in ") && !pageRow.contains("(due)"), "a relative time on the page: \(pageRow)")

        let report = try fixture.statusReport()
        #expect(StatusFields.jobs(in: report, "waiting") == ["later.url"], "\(report)")
        #expect(StatusFields.jobs(in: report, "active") == ["long.url"], "\(report)")
    }

    /// A UTC RFC 3339 time as local time in Asia/Kolkata with its offset, by Foundation, not by dropfetch's code.
    static func kolkataTime(_ utc: String) throws -> String {
        let instant = try #require(ISO8601DateFormatter().date(from: utc), "not RFC 3339 UTC: \(utc)")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "Asia/Kolkata")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ssxxx"
        return formatter.string(from: instant)
    }

    @Test("status --watch redraws every second and exits 0 on SIGINT")
    func statusWatch() throws {
        let fixture = try SpoolFixture()
        try FileManager.default.createDirectory(atPath: fixture.spool + "/hold", withIntermediateDirectories: true)
        try "http://127.0.0.1:9/h.bin\n".write(toFile: fixture.spool + "/hold/h.url", atomically: true, encoding: .utf8)
        let out = fixture.root.path + "/watch.out"
        let watcher = try AgentProcess(["status", "--watch"], config: fixture.configPath, log: out, in: fixture)
        try watcher.start()
        func frames() -> Int {
            ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").components(separatedBy: "dropfetch status at").count - 1
        }
        #expect(try waitUntil(timeout: .seconds(10)) { frames() >= 2 }, "frames: \(frames())")
        kill(watcher.pid, SIGINT)
        #expect(try watcher.wait(timeout: .seconds(5)) == .exited(0))
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(!text.contains("\u{1B}"), "escape codes into a file")
        #expect(text.contains("held:") && text.contains("h.url"), "\(text)")

        let both = try fixture.capture(["status", "--watch", "--json"])
        #expect(both.ending == .exited(2), "\(both)")
    }
}
