import Foundation
import Logging
import Testing
@testable import DropFetch

/// Issue 28: the status page's parts that need no browser or agent — the write throttle, the
/// per-minute ring, escaping, redaction, and the `status_page` key.
@Suite struct StatusPageUnitTests {
    static func pageFile() -> StatusPageFile {
        StatusPageFile(configured: "/nonexistent-dropfetch/index.html", agent: "a", logger: Logger(label: "test"))
    }

    @Test("written at once, then only when the gauges change, at most once a second; unchanged, never (no timer)")
    func throttle() {
        let file = Self.pageFile()
        let idle = StatusPageFile.Gauges(inbox: 1)
        #expect(file.nextWrite(idle) == 0, "the first page at once")
        file.write(now: 5_000, wallSeconds: 1_795_298_400, idle, config: Config(), on: nil)
        #expect(file.nextWrite(idle) == nil, "nothing changed: no deadline for the poll")
        var busy = idle
        busy.running = 1
        #expect(file.nextWrite(busy) == 6_000)
        file.writeIfDue(now: 5_500, wallSeconds: 1_795_298_400, busy, received: 0, config: Config(), on: GroupCommit(durable: false) { _ in })
        #expect(file.nextWrite(busy) == 6_000, "not before a second has passed")
        busy.stateRefresh = 6_100
        file.write(now: 6_100, wallSeconds: 1_795_298_401, busy, config: Config(), on: nil)
        #expect(file.nextWrite(busy) == nil)
        busy.stateRefresh = 7_100
        #expect(file.nextWrite(busy) == 7_100, "the once-a-second state refresh while bytes flow is a change")
    }

    @Test("the agent's page says it was written at the agent clock's time, not the system's")
    func writtenAtTheAgentClock() throws {
        let root = FileManager.default.temporaryDirectory.path + "/dropfetch-page-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/page", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var config = Config()
        config.spool = root + "/spool"
        let file = StatusPageFile(configured: root + "/page/index.html", agent: "a", logger: Logger(label: "test"))
        // 2001-09-09T01:46:40Z: far from any real now.
        file.write(now: 5_000, wallSeconds: 1_000_000_000, StatusPageFile.Gauges(inbox: 0), config: config, on: nil)
        let html = try String(contentsOfFile: root + "/page/index.html", encoding: .utf8)
        #expect(html.contains("<p class=\"written\">Written <time datetime=\"2001-09-09T01:46:40Z\""), "\(html.prefix(2_000))")
    }

    @Test("the ring counts bytes by minute, forgets minutes older than an hour, and shows idle minutes as 0")
    func ring() {
        var ring = ThroughputRing()
        ring.record(total: 0, now: 0)
        ring.record(total: 1_000, now: 10_000)
        ring.record(total: 1_500, now: 59_999)
        ring.record(total: 4_000, now: 60_000)
        ring.record(total: 4_000, now: 120_000)
        var minutes = ring.perMinute(at: 130_000)
        #expect(minutes.count == 60)
        #expect(Array(minutes.suffix(3)) == [1_500, 2_500, 0])
        ring.record(total: 4_100, now: 60 * 60_000)
        minutes = ring.perMinute(at: 60 * 60_000)
        #expect(minutes.last == 100)
        #expect(minutes.first == 2_500, "minute 1, fifty-nine minutes back")
        #expect(minutes.reduce(0, +) == 2_600, "minute 0 has left the hour")
    }

    @Test("names, URLs and messages are text; credentials are redacted; no schedule section without its facts")
    func escaping() {
        var status = SpoolStatus(inbox: 0, active: [], waiting: [], held: [], recent: [])
        var record = StatusRecord(job: "<script>alert('x')</script>&.url", state: .failed, className: "a\"b", priority: 0,
                                  agent: "x", submitted: "")
        record.error = Failure(.network, "reset by https://user:pw@host.example/<i>")
        record.downloads = [DownloadStatus(url: "https://user:pw@host.example/f", file: nil, state: .failed)]
        status.recent = [record]
        let page = StatusPage(status: status, queue: QueueOrder(entries: [], total: 0), agents: AgentRoster(members: []),
                              throughput: nil, writtenAt: 0, writer: "<me>")
        let html = page.html()
        #expect(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;.url"))
        #expect(!html.contains("<script"))
        #expect(!html.contains("<i>") && html.contains("&lt;i&gt;"))
        #expect(html.contains("a&quot;b"))
        #expect(!html.contains(":pw@"))
        #expect(html.contains("by &lt;me&gt;"))
        #expect(!html.contains("id=\"schedule\""))
        #expect(html.hasSuffix("</html>\n"))
        var scheduled = page
        scheduled.scheduleFacts = [(label: "Window", value: "<08:00-18:00>")]
        #expect(scheduled.html().contains("<dd>&lt;08:00-18:00&gt;</dd>"))
    }

    @Test("an agent's page reloads every 5 s and says so; the page status --html prints once does neither")
    func reloadsOnlyWhenRewritten() {
        var page = StatusPage(status: SpoolStatus(inbox: 0, active: [], waiting: [], held: [], recent: []),
                              queue: QueueOrder(entries: [], total: 0), agents: AgentRoster(members: []),
                              throughput: nil, writtenAt: 0, writer: "agent a")
        let live = page.html()
        #expect(live.contains("<meta http-equiv=\"refresh\" content=\"5\">"))
        #expect(live.contains("reloads every 5 s"))
        page.reloads = false
        let printed = page.html()
        #expect(!printed.contains("http-equiv=\"refresh\""))
        #expect(!printed.contains("reload"))
        #expect(printed.contains("Printed once."))
    }

    @Test("status_page: a path; status.json itself is refused with its line and column")
    func configKey() throws {
        #expect(try ConfigLoader.parse("status_page: /srv/www/index.html\n", file: "c.yaml").statusPage == "/srv/www/index.html")
        let error = try #require(throws: ConfigError.self) {
            try ConfigLoader.parse("spool: /x\nstatus_page: /srv/www/status.json\n", file: "c.yaml")
        }
        #expect(error.description.hasPrefix("c.yaml:2:14: status_page: "), "\(error)")
        #expect(throws: ConfigError.self) { try ConfigLoader.parse("status_page: [a]\n", file: "c.yaml") }
    }
}
