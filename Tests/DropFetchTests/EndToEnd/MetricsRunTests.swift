import Foundation
import Glibc
import Testing

/// Issue 15: a metrics file that continues across runs, moves while bytes flow, and does not
/// flood the log when it cannot be written.
@Suite("Metrics across runs, end to end")
struct MetricsRunTests {
    @Test("two run --once in a row: the metrics file's job counters add both runs; build_info, last success, gauges")
    func metricsContinue() throws {
        let server = try TestHTTPServer()
        server.serve("/one.bin", body: TestHTTPServer.randomBytes(7_000, seed: 15_103))
        server.serve("/two.bin", body: TestHTTPServer.randomBytes(9_000, seed: 15_104))
        let fixture = try SpoolFixture()
        let path = fixture.root.path + "/dropfetch.prom"
        try fixture.writeConfig("metrics_file: \(path)\n")
        try fixture.dropSettled("one.url", server.url("/one.bin") + "\n")
        try fixture.dropSettled("bad.url", server.url("/nothing") + "\n")
        #expect(try fixture.runOnce() == 1)
        let first = try Metrics(path)
        #expect(first["dropfetch_jobs_total", "state=\"done\""] == 1)
        #expect(first["dropfetch_jobs_total", "state=\"failed\""] == 1)
        #expect(first["dropfetch_downloaded_bytes_total"] == 7_000)

        try fixture.dropSettled("two.url", server.url("/two.bin") + "\n")
        try FileManager.default.createDirectory(atPath: fixture.spool + "/hold", withIntermediateDirectories: true)
        try "http://127.0.0.1:9/x\n".write(toFile: fixture.spool + "/hold/held.url", atomically: true, encoding: .utf8)
        let before = Double(time(nil))
        #expect(try fixture.runOnce() == 0)
        let second = try Metrics(path)
        #expect(second["dropfetch_jobs_total", "state=\"done\""] == 2, "\(second.text)")
        #expect(second["dropfetch_jobs_total", "state=\"failed\""] == 1, "\(second.text)")
        #expect(second["dropfetch_downloaded_bytes_total"] == 16_000)
        #expect(second["dropfetch_received_bytes_total", "class=\"default\""] == 16_000)
        #expect(second["dropfetch_build_info", "version=\""] == 1, "\(second.text)")
        let success = try #require(second["dropfetch_last_success_timestamp_seconds"])
        #expect(success >= before - 1 && success <= Double(time(nil)) + 1)
        #expect(second["dropfetch_held_jobs"] == 1)
        #expect(second["dropfetch_inbox_jobs"] == 0)
        #expect(second["dropfetch_transfers_active"] == 0)
        #expect(second.text.contains("# TYPE dropfetch_jobs_total counter"))
    }

    @Test("bytes count while they arrive; an unwritable metrics_file warns once, not every second")
    func metricsWhileRunning() throws {
        let server = try TestHTTPServer()
        // About 3 s of data.
        server.serve("/m.bin", body: TestHTTPServer.randomBytes(480_000, seed: 15_105),
                     faults: [.drip(bytesPerChunk: 16_384, interval: .milliseconds(100))])
        let fixture = try SpoolFixture()
        let path = fixture.root.path + "/dropfetch.prom"
        try fixture.writeConfig("metrics_file: \(path)\n")
        try fixture.startDaemon()
        try fixture.drop("m.url", server.url("/m.bin") + "\n")
        var partial: Double?
        #expect(try waitUntil(timeout: .seconds(20)) {
            guard let bytes = (try? Metrics(path))?["dropfetch_downloaded_bytes_total"], bytes > 0, bytes < 480_000,
                  fixture.jobs(in: "done").isEmpty else { return false }
            partial = bytes
            return true
        }, "no bytes counted before the download ended: \((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")")
        #expect(partial != nil)
        #expect(try waitUntil(timeout: .seconds(20)) { fixture.jobs(in: "done") == ["m.url"] })
        #expect(try waitUntil(timeout: .seconds(5)) { (try? Metrics(path))?["dropfetch_downloaded_bytes_total"] == 480_000 })
        #expect(try fixture.stopDaemon() == 0)

        // Now into a folder that does not exist: the run takes about 3 s, with a write each second.
        let broken = fixture.root.path + "/no-such-folder/dropfetch.prom"
        let config = try fixture.writeInfoConfig("metrics_file: \(broken)\n")
        try fixture.dropSettled("again.url", server.url("/m.bin") + "\n")
        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "\(once)")
        let warnings = once.stderr.split(separator: "\n").filter { $0.contains("cannot write metrics_file") }
        #expect(warnings.count == 1, "\(once.stderr)")
        #expect(warnings.first?.contains(broken) == true)
        // The counters in the spool went on: 480,000 bytes of each run.
        let counters = try #require(fixture.jsonObject(at: ".metrics.test-agent.json"), "\(fixture.names(in: ""))")
        #expect((counters["received_bytes"] as? [String: Any])?["default"] as? Int == 960_000, "\(counters)")
    }
}

/// A Prometheus text file's samples, looked up by name and a label fragment.
struct Metrics {
    let text: String

    init(_ path: String) throws { text = try String(contentsOfFile: path, encoding: .utf8) }

    /// The value of the first sample of `name` whose labels contain `label` (any, when empty).
    subscript(name: String, label: String = "") -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let labels = line[..<space]
            guard label.isEmpty || labels.contains(label) else { continue }
            return Double(line[line.index(after: space)...])
        }
        return nil
    }
}
