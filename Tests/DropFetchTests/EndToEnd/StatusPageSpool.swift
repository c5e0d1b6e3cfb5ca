import DropFetch
import Foundation
import Glibc

/// A spool with a job in every place the status page shows (issue 28): one running and one
/// waiting in the live agent `test-agent`'s work folder (the test holds its lock), one orphaned in
/// the dead agent `gone-agent`'s, two in the inbox (the later one with the higher priority), two
/// held (one with a hostile name), one done (hostile name, credentials in its URL) and one failed.
struct StatusPageSpool {
    /// A job file name that is HTML markup; a file name cannot hold `/`, so `</script>` is only
    /// in the done record's `job` field (`doneJob`).
    static let hostileFile = "<img src=x onerror=alert(1)>.url"
    static let doneJob = "<script>alert(1)</script>.url"
    static let secret = "s3cr3t-pass"

    let fixture: SpoolFixture
    /// flock(2) on `work/test-agent/.lock`, held while this value lives: the agent runs.
    private let lock: Int32

    init() throws {
        fixture = try SpoolFixture()
        let spool = fixture.spool
        for folder in ["work/test-agent", "work/gone-agent", "hold", "inbox/urgent"] {
            try FileManager.default.createDirectory(atPath: spool + "/" + folder, withIntermediateDirectories: true)
        }
        lock = open(spool + "/work/test-agent/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else { throw FixtureError.badStatus("lock") }
        _ = FileManager.default.createFile(atPath: spool + "/work/gone-agent/.lock", contents: nil)

        var running = StatusRecord(job: "big.iso.url", state: .running, className: "iso", priority: 0, agent: "test-agent",
                                   submitted: "2026-01-01T10:00:00Z")
        var download = DownloadStatus(url: "https://example.org/big.iso", file: "/srv/big.iso", state: .running)
        download.bytes = 3 * 1024 * 1024
        download.size = 8 * 1024 * 1024
        download.bytesPerSecond = 512 * 1024
        running.downloads = [download]
        try write(running, job: "big.iso.url", folder: "work/test-agent", suffix: ".state.json")

        var waiting = StatusRecord(job: "later.url", state: .waiting, className: "default", priority: 0, agent: "test-agent",
                                   submitted: "2026-01-01T10:01:00Z", attempts: 2)
        var failedAttempt = DownloadStatus(url: "https://example.org/later.bin", file: nil, state: .waiting)
        failedAttempt.error = Failure(.httpStatus, "HTTP 503 Service Unavailable")
        waiting.downloads = [failedAttempt]
        waiting.retryAt = "2099-01-01T00:00:00Z"
        try write(waiting, job: "later.url", folder: "work/test-agent", suffix: ".state.json")

        let orphan = StatusRecord(job: "stranded.url", state: .running, className: "default", priority: 0, agent: "gone-agent",
                                  submitted: "2026-01-01T10:02:00Z")
        try write(orphan, job: "stranded.url", folder: "work/gone-agent", suffix: ".state.json")

        try fixture.dropSettled("first.url", "https://example.org/first.bin\n")
        try fixture.dropSettled("second.url", "priority=10\nhttps://example.org/second.bin\n", folder: "urgent")
        try SpoolFixture.backdate(spool + "/inbox/urgent/second.url", seconds: 30)

        for name in ["paused.url", StatusPageSpool.hostileFile] {
            try "https://example.org/held\n".write(toFile: spool + "/hold/" + name, atomically: false, encoding: .utf8)
        }

        var done = StatusRecord(job: StatusPageSpool.doneJob, state: .done, className: "default", priority: 0,
                                agent: "test-agent", submitted: "2026-01-01T09:00:00Z", attempts: 1)
        var fetched = DownloadStatus(url: "https://user:\(StatusPageSpool.secret)@example.org/ok.bin", file: "/srv/ok.bin", state: .done)
        fetched.bytes = 2048
        fetched.seconds = 1.5
        done.downloads = [fetched]
        done.finished = "2026-01-01T09:00:02Z"
        try write(done, job: "fine.url", folder: "done", suffix: ".status.json")

        var failed = StatusRecord(job: "broken.url", state: .failed, className: "default", priority: 0, agent: "test-agent",
                                  submitted: "2026-01-01T09:30:00Z", attempts: 1)
        failed.error = Failure(.httpStatus, "HTTP 404 <b>Not Found</b> from https://bob:\(StatusPageSpool.secret)@example.org/x")
        failed.finished = "2026-01-01T09:30:01Z"
        try write(failed, job: "broken.url", folder: "failed", suffix: ".status.json")
    }

    /// The record's file and its job file in `folder`, named after `job`.
    private func write(_ record: StatusRecord, job: String, folder: String, suffix: String) throws {
        let base = fixture.spool + "/" + folder + "/"
        try "https://example.org/x\n".write(toFile: base + job, atomically: false, encoding: .utf8)
        try Data(record.encoded()).write(to: URL(fileURLWithPath: base + String(job.dropLast(4)) + suffix))
    }

    func release() { close(lock) }
}

/// One `<tr>` of a section of the DOM Chromium produced: its `data-state` and its row header's text.
struct PageRow: Hashable, CustomStringConvertible {
    var name: String
    var state: String
    var description: String { "\(name) [\(state)]" }

    /// The rows of `<section id="ID">` in serialized HTML, in document order.
    static func rows(of id: String, in dom: String) -> [PageRow]? {
        guard let start = dom.range(of: "<section id=\"\(id)\""),
              let end = dom.range(of: "</section>", range: start.upperBound..<dom.endIndex) else { return nil }
        let section = String(dom[start.lowerBound..<end.lowerBound])
        var rows: [PageRow] = []
        var rest = section[...]
        while let tr = rest.range(of: "<tr data-job=") {
            rest = rest[tr.upperBound...]
            guard let stateStart = rest.range(of: "data-state=\""),
                  let stateEnd = rest.range(of: "\"", range: stateStart.upperBound..<rest.endIndex),
                  let headerStart = rest.range(of: "<th scope=\"row\">"),
                  let headerEnd = rest.range(of: "</th>", range: headerStart.upperBound..<rest.endIndex) else { break }
            rows.append(PageRow(name: unescape(String(rest[headerStart.upperBound..<headerEnd.lowerBound])),
                                state: String(rest[stateStart.upperBound..<stateEnd.lowerBound])))
        }
        return rows
    }

    /// Text content as HTML serializes it (`&lt;`, `&gt;`, `&amp;`, `&quot;`, `&nbsp;`) made plain.
    /// A child element inside the header would be left as markup, and the name then not match.
    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&nbsp;", with: "\u{a0}")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
