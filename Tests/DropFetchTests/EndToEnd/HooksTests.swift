import DropFetch
import Foundation
import Testing

/// `hooks`: argv programs run when a job is done, fails, or the queue drains.
@Suite("Hooks, end to end")
struct HooksTests {
    @Test("on_done, on_failed and on_idle run with the DROPFETCH_* environment, without a shell")
    func hooksRun() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(3_000, seed: 60)
        server.serve("/ok.bin", body: body)
        let fixture = try SpoolFixture()
        let record = fixture.root.path + "/hooks"
        try FileManager.default.createDirectory(atPath: record, withIntermediateDirectories: true)
        // A script stands in for the user's notifier; it records the environment it was given.
        let script = record + "/hook.sh"
        try #"env | grep '^DROPFETCH_' | sort > "$1/$2.$DROPFETCH_JOB.env""#.write(toFile: script, atomically: false, encoding: .utf8)
        try fixture.writeConfig("""
            hooks:
              on_done: [/bin/sh, \(script), \(record), done]
              on_failed: [/bin/sh, \(script), \(record), failed]
              on_idle: [/usr/bin/touch, \(record)/idle]

            """)
        try fixture.drop("ok.url", server.url("/ok.bin") + "\n")
        try fixture.drop("bad.url", server.url("/missing.bin") + "\n")

        #expect(try fixture.runOnce() == 1)

        #expect(!fixture.log.contains("could not start"), "\(fixture.log)")
        let doneFile = record + "/done.ok.url.env"
        let failedFile = record + "/failed.bad.url.env"
        #expect(try waitUntil { FileManager.default.fileExists(atPath: doneFile) && FileManager.default.fileExists(atPath: failedFile) && FileManager.default.fileExists(atPath: record + "/idle") })
        let done = try String(contentsOfFile: doneFile, encoding: .utf8)
        #expect(done.contains("DROPFETCH_JOB=ok.url"))
        #expect(done.contains("DROPFETCH_STATE=done"))
        #expect(done.contains("DROPFETCH_STATUS_FILE=\(fixture.spool)/done/ok.status.json"))
        #expect(done.contains("DROPFETCH_FILES=\(fixture.destination)/ok.bin"))
        let failed = try String(contentsOfFile: failedFile, encoding: .utf8)
        #expect(failed.contains("DROPFETCH_STATE=failed"))
        #expect(failed.contains("DROPFETCH_STATUS_FILE=\(fixture.spool)/failed/bad.status.json"))
    }
}

@Suite("Metrics file, end to end")
struct MetricsFileTests {
    @Test("metrics_file holds Prometheus counters of filed jobs and bytes")
    func metricsWritten() throws {
        let server = try TestHTTPServer()
        server.serve("/m.bin", body: TestHTTPServer.randomBytes(7_000, seed: 61))
        let fixture = try SpoolFixture()
        let path = fixture.root.path + "/dropfetch.prom"
        try fixture.writeConfig("metrics_file: \(path)\n")
        try fixture.drop("m.url", server.url("/m.bin") + "\n")
        try fixture.drop("x.url", server.url("/nothing") + "\n")

        #expect(try fixture.runOnce() == 1)

        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#"dropfetch_jobs_total{agent="test-agent",state="done"} 1"#))
        #expect(text.contains(#"dropfetch_jobs_total{agent="test-agent",state="failed"} 1"#))
        #expect(text.contains(#"dropfetch_downloaded_bytes_total{agent="test-agent"} 7000"#))
        #expect(text.contains("# TYPE dropfetch_transfers_active gauge"))
        let stall = text.split(separator: "\n").first { $0.hasPrefix("dropfetch_loop_stall_seconds{") }
        let seconds = stall.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
        #expect(seconds.map { $0 > 0 && $0 < 5 } == true, "\(stall.map(String.init) ?? "no dropfetch_loop_stall_seconds")")
    }
}
