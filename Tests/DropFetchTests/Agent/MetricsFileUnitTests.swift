import Foundation
import Logging
import Testing
@testable import DropFetch

@Suite struct MetricsFileUnitTests {
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.path + "/dropfetch-metrics-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path + "/hold", withIntermediateDirectories: true)
        return path
    }

    static func metrics(_ root: String, file: String? = nil) -> MetricsFile {
        MetricsFile(path: file ?? root + "/m.prom", agent: "a\"b", spoolRoot: root, holdFolder: root + "/hold",
                    logger: Logger(label: "test"))
    }

    @Test("counters persist: a second instance on the same spool continues them")
    func countersContinue() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let first = Self.metrics(root)
        first.loadCounters()
        first.filed(StatusRecord(job: "x.url", state: .done, className: "default", priority: 0, agent: "", submitted: ""),
                    now: 1_795_000_000)
        first.retried()
        first.bytesByClass = ["default": 100]
        first.write(now: 0, MetricsFile.Gauges())

        let second = Self.metrics(root)
        second.loadCounters()
        second.filed(StatusRecord(job: "y.url", state: .failed, className: "default", priority: 0, agent: "", submitted: ""),
                     now: 1_795_000_100)
        second.bytesByClass = ["default": 50, "iso": 7]
        #expect(second.counters.jobs == ["done": 1, "failed": 1])
        #expect(second.counters.receivedBytes == ["default": 150, "iso": 7])
        #expect(second.counters.retries == 1)
        #expect(second.counters.lastSuccess == 1_795_000_000, "the done job's time, carried over; a failed job is no success")
    }

    @Test("written when something changed, at most once a second; idle, never")
    func writeSchedule() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let metrics = Self.metrics(root)
        let gauges = MetricsFile.Gauges(active: 0, ready: 0, waiting: 0, inbox: 1)
        #expect(metrics.nextWrite(gauges) == 0, "the first write is at once")
        metrics.writeIfDue(now: 5_000, gauges)
        #expect(metrics.nextWrite(gauges) == nil, "nothing changed: no timer")
        metrics.retried()
        #expect(metrics.nextWrite(gauges) == 6_000)
        metrics.writeIfDue(now: 5_500, gauges)
        #expect(metrics.nextWrite(gauges) == 6_000, "not yet written")
        metrics.writeIfDue(now: 6_000, gauges)
        #expect(metrics.nextWrite(gauges) == nil)
        #expect(metrics.nextWrite(MetricsFile.Gauges(active: 0, ready: 0, waiting: 0, inbox: 2)) == 7_000)
        metrics.bytesByClass = [:]
        #expect(metrics.nextWrite(gauges) == nil, "the same bytes change nothing")
    }

    @Test("written on a worker: the files appear once its batch is back, with the held jobs counted there")
    func writtenOnAWorker() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(FileManager.default.createFile(atPath: root + "/hold/x.url", contents: Data()))
        let metrics = Self.metrics(root)
        let worker = GroupCommit(durable: false) { error in Issue.record("worker: \(error)") }
        metrics.retried()
        metrics.writeIfDue(now: 0, MetricsFile.Gauges(active: 2, ready: 0, waiting: 0, inbox: 0), on: worker)
        #expect(!FileManager.default.fileExists(atPath: root + "/m.prom"), "handed to the worker, not written here")
        worker.flush()
        try GroupCommitTests.collect(worker)
        let text = try String(contentsOfFile: root + "/m.prom", encoding: .utf8)
        #expect(text.contains(#"dropfetch_held_jobs{agent="a\"b"} 1"#), "\(text)")
        #expect(text.contains(#"dropfetch_transfers_active{agent="a\"b"} 2"#))
        #expect(text.contains(#"dropfetch_retries_total{agent="a\"b"} 1"#))
        let counters = try #require(FileManager.default.contents(atPath: root + "/.metrics.a\"b.json"))
        #expect(MetricsCounters.decode(Array(counters))?.retries == 1)
    }

    @Test("the text: build_info, counters, last success, gauges, labels escaped")
    func text() {
        var counters = MetricsCounters()
        counters.jobs = ["done": 3]
        counters.receivedBytes = ["default": 10, "iso": 5]
        counters.lastSuccess = 1_795_400_000
        let text = MetricsFile.text(agent: "a\"b", counters, MetricsFile.Gauges(active: 1, ready: 2, waiting: 3, inbox: 4),
                                    held: 5, stall: 0)
        #expect(text.contains(#"dropfetch_build_info{agent="a\"b",version="\#(DropFetchVersion.string)"} 1"#))
        #expect(text.contains(#"dropfetch_jobs_total{agent="a\"b",state="done"} 3"#))
        #expect(text.contains(#"dropfetch_jobs_total{agent="a\"b",state="cancelled"} 0"#))
        #expect(text.contains(#"dropfetch_downloaded_bytes_total{agent="a\"b"} 15"#))
        #expect(text.contains(#"dropfetch_received_bytes_total{agent="a\"b",class="iso"} 5"#))
        #expect(text.contains(#"dropfetch_last_success_timestamp_seconds{agent="a\"b"} 1795400000"#))
        for (name, value) in [("transfers_active", 1), ("queue_ready", 2), ("queue_waiting", 3), ("inbox_jobs", 4),
                              ("held_jobs", 5)] {
            #expect(text.contains("dropfetch_\(name){agent=\"a\\\"b\"} \(value)\n"), "\(name)")
            #expect(text.contains("# TYPE dropfetch_\(name) gauge"))
        }
    }

    @Test("counters files from an older version or cut short are read or refused, never a crash")
    func countersDecode() {
        #expect(MetricsCounters.decode(Array(#"{"jobs":{"done":2}}"#.utf8))?.jobs == ["done": 2])
        #expect(MetricsCounters.decode(Array(#"{"jobs":{"done":2"#.utf8)) == nil)
        let counters = MetricsCounters.decode(MetricsCounters().adding(MetricsCounters()).encoded())
        #expect(counters == MetricsCounters())
    }
}
