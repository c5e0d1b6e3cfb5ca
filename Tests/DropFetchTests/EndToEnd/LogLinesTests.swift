import Foundation
import Testing

/// Issue 15: the log says what happened. One logfmt line per download start, failed attempt,
/// filed job and hook outcome, with the job, URL, file, bytes, duration, speed, attempt and error
/// kind; values quoted where they must be; into a pipe no carriage return and no escape code.
@Suite("Log lines, end to end")
struct LogLinesTests {
    @Test("piped: no carriage return, no escape code; every line is logfmt; the finish line names URL, size and duration")
    func pipedLogfmt() throws {
        let (server, body) = try TestHTTPServer.slow("/piped.bin", seed: 15_003)
        server.serve("/small.bin", body: TestHTTPServer.randomBytes(5_000, seed: 15_004))
        let fixture = try SpoolFixture()
        let config = try fixture.writeInfoConfig()
        try fixture.dropSettled("b job.url", server.url("/piped.bin") + "\n")
        try fixture.dropSettled("a\"q=1.url", server.url("/small.bin") + "\n")
        try fixture.dropSettled("gone.url", server.url("/missing.bin") + "\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(1), "\(once)")
        #expect(!once.stderr.contains("\r"), "a carriage return in piped output")
        #expect(!once.stderr.contains("\u{1B}"), "an escape code in piped output")
        #expect(once.stdout.isEmpty)
        var parsed: [LogfmtLine] = []
        for text in once.stderr.split(separator: "\n").map(String.init) {
            do {
                let line = try LogfmtLine(text)
                #expect(line.pairs.first?.key == "ts" && line["level"] != nil && line["msg"] != nil, "\(text)")
                parsed.append(line)
            } catch {
                Issue.record("\(error)")
            }
        }
        #expect(once.stderr.contains(#"job="b job.url""#), "a name with a space is quoted:\n\(once.stderr)")

        let finish = try #require(parsed.first { $0["msg"] == "job done" && $0["job"] == "b job.url" }, "\(once.stderr)")
        #expect(finish["level"] == "info")
        #expect(finish["url"] == server.url("/piped.bin"))
        #expect(finish["bytes"] == "\(body.count)")
        #expect(finish["file"] == fixture.destination + "/piped.bin")
        let duration = try #require(finish["duration"], "\(finish)")
        let seconds = try #require(Double(duration.dropLast()), "duration \(duration) is not seconds")
        // The drip takes about 2.4 s; the duration is the transfer's own.
        #expect(duration.hasSuffix("s") && seconds >= 1.5 && seconds < 60, "\(finish)")
        #expect(finish["speed"]?.hasSuffix("/s") == true, "\(finish)")
        #expect(finish["attempts"] == "1")

        let quoted = try #require(parsed.first { $0["msg"] == "job done" && $0["job"] == "a\"q=1.url" }, "\(once.stderr)")
        #expect(quoted["bytes"] == "5000")
        #expect(parsed.contains { $0["msg"] == "download started" && $0["job"] == "b job.url" && $0["attempt"] == "1" })

        let failed = try #require(parsed.first { $0["msg"] == "job failed" && $0["job"] == "gone.url" }, "\(once.stderr)")
        #expect(failed["error"] == "http_status")
        #expect(failed["url"] == server.url("/missing.bin"))
        #expect(parsed.contains { $0["msg"] == "attempt failed" && $0["job"] == "gone.url" && $0["next"] == "none"
            && $0["error"] == "http_status" && $0["http_status"] == "404" })
    }

    @Test("a retry is one line with the error kind, the attempt and when the next try is due")
    func retryLine() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(20_000, seed: 15_005)
        server.serve("/flaky.bin", body: body, faults: [.times(1, .status(code: 503))])
        let fixture = try SpoolFixture()
        let config = try fixture.writeInfoConfig()
        try fixture.dropSettled("flaky.url", server.url("/flaky.bin") + "\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "\(once)")
        let lines = try once.stderr.split(separator: "\n").map { try LogfmtLine(String($0)) }
        let retry = try #require(lines.first { $0["msg"] == "attempt failed" }, "\(once.stderr)")
        #expect(retry["level"] == "warning")
        #expect(retry["job"] == "flaky.url" && retry["attempt"] == "1" && retry["error"] == "http_status")
        #expect(retry["next"] == "retry" && retry["retry_in"]?.hasSuffix("s") == true && retry["retry_at"] != nil, "\(retry)")
        let done = try #require(lines.first { $0["msg"] == "job done" }, "\(once.stderr)")
        #expect(done["attempts"] == "2")
        #expect(lines.filter { $0["msg"] == "download started" }.map { $0["attempt"] } == ["1", "2"])
    }

    @Test("a hook's outcome is one log line naming the hook and the job; run --once waits for it")
    func hookOutcomes() throws {
        let server = try TestHTTPServer()
        server.serve("/h.bin", body: TestHTTPServer.randomBytes(3_000, seed: 15_102))
        let fixture = try SpoolFixture()
        let config = try fixture.writeInfoConfig("""
            hooks:
              on_done: [/bin/sh, -c, "exit 3"]
              on_failed: [/bin/true]

            """)
        try fixture.dropSettled("hooked.url", server.url("/h.bin") + "\n")
        try fixture.dropSettled("missing.url", server.url("/nothing.bin") + "\n")

        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(1), "\(once)")
        let lines = try once.stderr.split(separator: "\n").map { try LogfmtLine(String($0)) }
        let failed = try #require(lines.first { $0["msg"] == "hook failed" }, "\(once.stderr)")
        #expect(failed["hook"] == "on_done" && failed["job"] == "hooked.url" && failed["program"] == "/bin/sh", "\(failed)")
        #expect(failed["exit_status"] == "3" && failed["level"] == "warning", "\(failed)")
        let done = try #require(lines.first { $0["msg"] == "hook done" }, "\(once.stderr)")
        #expect(done["hook"] == "on_failed" && done["job"] == "missing.url" && done["level"] == "info", "\(done)")
    }
}

extension SpoolFixture {
    /// A config like the fixture's (same spool, destination, agent and retry policy) at log level
    /// info, as a user runs it, followed by `extra`; returns its path.
    func writeInfoConfig(_ extra: String = "") throws -> String {
        let path = root.path + "/config-info.yaml"
        let text = """
            spool: \(spool)
            destination: \(destination)
            agent_id: test-agent
            log_level: info
            retry: { attempts: 3, initial_delay: 100ms, max_delay: 1s }

            """ + extra
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

extension TestHTTPServer {
    /// A server with a download of about 2.5 s at `path`: 400,000 bytes dripped 16 KiB every 100 ms.
    static func slow(_ path: String, seed: UInt64) throws -> (TestHTTPServer, [UInt8]) {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(400_000, seed: seed)
        server.serve(path, body: body, faults: [.drip(bytesPerChunk: 16_384, interval: .milliseconds(100))])
        return (server, body)
    }
}
