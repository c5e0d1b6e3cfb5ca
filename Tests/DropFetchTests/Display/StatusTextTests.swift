import Foundation
import Testing
@testable import DropFetch

@Suite struct StatusTextTests {
    static let now = Timestamp.parse("2026-11-21T22:00:00Z")!

    static func running(_ job: String, bytes: Int64, size: Int64?, speed: Int64?) -> StatusRecord {
        var record = StatusRecord(job: job, state: .running, className: "default", priority: 0, agent: "a",
                                  submitted: "2026-11-21T21:59:00Z")
        var download = DownloadStatus(url: "https://example.org/\(job).iso", file: "/srv/\(job).iso", state: .running)
        download.bytes = bytes
        download.size = size
        download.bytesPerSecond = speed
        record.downloads = [download]
        return record
    }

    @Test("active downloads: an aligned table with sizes, percent, speed and ETA")
    func activeTable() throws {
        let status = SpoolStatus(inbox: 2, active: [Self.running("a.url", bytes: 1_048_576, size: 10_485_760, speed: 1_048_576),
                                                    Self.running("longer-name.url", bytes: 5_000, size: nil, speed: nil)],
                                 waiting: [], held: [], recent: [])
        let lines = StatusText.render(status, now: Self.now).split(separator: "\n").map(String.init)
        #expect(lines[0] == "inbox: 2   active: 2   waiting: 0   held: 0")
        let header = try #require(lines.first { $0.contains("SPEED") })
        let first = try #require(lines.first { $0.contains("a.url") })
        let second = try #require(lines.first { $0.contains("longer-name.url") })
        #expect(first.contains("1.0 MiB") && first.contains("10.0 MiB") && first.contains("10%"), "\(first)")
        #expect(first.contains("1.0 MiB/s") && first.contains(" 9s"), "\(first)")
        #expect(second.contains("4.9 KiB") && second.contains("?"), "\(second)")
        // Right-aligned numbers end under their headings; the URL column starts at one place.
        for heading in ["SIZE", "SPEED", "ETA"] {
            let end = try #require(header.range(of: heading)).upperBound.utf16Offset(in: header)
            #expect(first.count >= end && second.count >= end)
            #expect(Array(first)[end - 1] != " " && Array(second)[end - 1] != " ", "\(heading) misaligned\n\(header)\n\(first)\n\(second)")
        }
        let url = try #require(header.range(of: "URL")).lowerBound.utf16Offset(in: header)
        #expect(Array(first)[url...].starts(with: "https://".map { $0 }))
        #expect(Array(second)[url...].starts(with: "https://".map { $0 }))
    }

    @Test("waiting jobs show the next try, attempts and last error; held and recent jobs are listed")
    func waitingHeldRecent() throws {
        var waiting = StatusRecord(job: "w.url", state: .waiting, className: "default", priority: 0, agent: "a",
                                   submitted: "", attempts: 2)
        waiting.retryAt = "2026-11-21T22:00:28Z"
        var download = DownloadStatus(url: "https://h/w", file: nil, state: .waiting)
        download.error = Failure(.httpStatus, "HTTP 503")
        waiting.downloads = [download]
        let queued = StatusRecord(job: "q.url", state: .queued, className: "default", priority: 0, agent: "a", submitted: "")
        var done = StatusRecord(job: "d.url", state: .done, className: "default", priority: 0, agent: "a", submitted: "")
        done.finished = "2026-11-21T21:58:00Z"
        var doneDownload = DownloadStatus(url: "https://h/d", file: "/srv/d", state: .done)
        doneDownload.bytes = 7_000
        doneDownload.seconds = 0.42
        done.downloads = [doneDownload]
        var heldState = StatusRecord(job: "h.url", state: .running, className: "default", priority: 0, agent: "a",
                                     submitted: "", attempts: 1)
        var heldDownload = DownloadStatus(url: "https://h/h", file: nil, state: .queued)
        heldDownload.bytes = 2_048
        heldState.downloads = [heldDownload]
        let status = SpoolStatus(inbox: 0, active: [], waiting: [queued, waiting], held: ["h.url", "plain.url"],
                                 heldStates: ["h.url": heldState], recent: [done])
        let text = StatusText.render(status, now: Self.now)
        let lines = text.split(separator: "\n").map(String.init)
        let w = try #require(lines.first { $0.contains("w.url") })
        // Local time with its offset (issue 36); the end-to-end test pins the zone.
        #expect(w.range(of: #"2026-11-2\dT\d\d:\d\d:28[+-]\d\d:\d\d \(in 28s\)"#, options: .regularExpression) != nil, "\(w)")
        #expect(w.contains("waiting") && !w.contains("22:00:28Z") && w.contains("http_status: HTTP 503"), "\(w)")
        let q = try #require(lines.first { $0.contains("q.url") })
        #expect(q.contains("queued"), "\(q)")
        #expect(lines.contains { $0.contains("h.url") && $0.contains("2.0 KiB") }, "\(text)")
        #expect(lines.contains { $0.contains("plain.url") }, "\(text)")
        #expect(lines.contains { $0.contains("d.url") && $0.contains("6.8 KiB") && $0.contains("0.4s") }, "\(text)")
        let due = StatusText.nextTry("2026-11-21T21:59:00Z", now: Self.now)
        #expect(due.range(of: #"^2026-11-2\dT\d\d:\d\d:00[+-]\d\d:\d\d \(due\)$"#, options: .regularExpression) != nil, "\(due)")
        #expect(StatusText.nextTry(nil, now: Self.now) == "-")
        #expect(!text.contains("active:\n"), "an empty section is left out")
    }

    @Test func tableAlignment() {
        var table = TextTable([("NAME", .left), ("N", .right), ("NOTE", .left)])
        table.add(["a", "1", "x"])
        table.add(["bbbb", "100", ""])
        table.add(["c\u{1B}", "2"])
        #expect(table.lines(indent: "  ") == ["  NAME    N  NOTE", "  a       1  x", "  bbbb  100", "  c?      2"])
    }
}
