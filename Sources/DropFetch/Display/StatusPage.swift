import Glibc

/// The status page of docs/status-page.md: one self-contained HTML file (inline CSS, no script, no
/// external fetch, so it works from `file://` and under any web server) showing the whole spool —
/// agents, active downloads, the queue in the order it will run, waiting, held, recent results,
/// per-class totals and the last hour's throughput — for people without a shell.
///
/// Every name, URL and message is escaped (HTMLText) and URLs are redacted again (Redaction): a
/// job named `<script>….url` is text. It reloads itself with `<meta http-equiv="refresh">`,
/// which works from `file://` where a fetch of `status.json` would be refused.
public struct StatusPage: Sendable {
    /// Bytes received per minute over the last hour, oldest first, as the agent that wrote the page
    /// counted them; nil where no agent counted (`status --html`).
    public struct Throughput: Sendable, Equatable {
        public var perMinute: [Int64]
        public var agent: String
        public init(perMinute: [Int64], agent: String) {
            self.perMinute = perMinute
            self.agent = agent
        }
    }

    /// Seconds between the browser's reloads of the page.
    public static let reloadSeconds = 5
    /// Results shown under "Recent results".
    public static let recentLimit = 20

    public var status: SpoolStatus
    public var queue: QueueOrder
    public var agents: AgentRoster
    public var throughput: Throughput?
    /// Unix seconds.
    public var writtenAt: Int64
    /// Who wrote it: `agent host-a`, or `dropfetch status --html`.
    public var writer: String
    /// An agent that wrote the page as it stopped: shown as stopped, whatever its lock says.
    public var stoppedAgent: String?
    /// The schedule window and quota state, as label and value pairs (ScheduleStatus.facts);
    /// nil, without `schedule:` and `quota:`, leaves the section out.
    public var scheduleFacts: [(label: String, value: String)]?
    /// Whether the page reloads itself: an agent rewrites its page; the one `status --html` prints once does not.
    public var reloads = true

    public init(status: SpoolStatus, queue: QueueOrder, agents: AgentRoster, throughput: Throughput?, writtenAt: Int64,
                writer: String, stoppedAgent: String? = nil, scheduleFacts: [(label: String, value: String)]? = nil) {
        self.status = status
        self.queue = queue
        self.agents = agents
        self.throughput = throughput
        self.writtenAt = writtenAt
        self.writer = writer
        self.stoppedAgent = stoppedAgent
        self.scheduleFacts = scheduleFacts
    }

    /// Reads the spool of `config` (state files, inbox, hold/, done/, failed/, agents' locks);
    /// `now` (seconds since the epoch) is the agent's clock for its pages, the system's for `status --html`.
    public static func read(config: Config, throughput: Throughput?, writer: String, stoppedAgent: String? = nil,
                            cache: QueueOrder.JobFileCache = QueueOrder.JobFileCache(), now: Int64 = Int64(time(nil))) -> StatusPage {
        let status = SpoolStatus.read(config: config, recentLimit: recentLimit, now: now)
        return StatusPage(status: status, queue: QueueOrder.read(config: config, status: status, cache: cache, now: now),
                          agents: AgentRoster.read(config: config), throughput: throughput,
                          writtenAt: now, writer: writer, stoppedAgent: stoppedAgent,
                          scheduleFacts: status.schedule?.facts)
    }

    /// Jobs of agents that are gone, whatever their state file says.
    var orphaned: [StatusRecord] { (status.active + status.waiting).filter(status.isOrphaned).sorted { $0.job < $1.job } }
    var active: [StatusRecord] { status.active.filter { !status.isOrphaned($0) } }
    /// Claimed jobs waiting for a retry, free space or a name's owner (queued ones are in `queue`).
    var waiting: [StatusRecord] { status.waiting.filter { !status.isOrphaned($0) && $0.state != .queued } }

    /// The whole page, ending in `</html>` and a line feed.
    public func html() -> String {
        let title = "dropfetch: \(active.count) active, \(queue.total) queued, \(waiting.count) waiting"
        var parts = [
            "<!DOCTYPE html>",
            "<html lang=\"en\">",
            "<head>",
            "<meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta name=\"color-scheme\" content=\"light dark\">",
            "<title>\(HTMLText.escape(title))</title>",
            "<style>\n" + StatusPageStyle.css + "</style>",
            "</head>",
            "<body>",
            "<a class=\"skip\" href=\"#active\">Skip to active downloads</a>",
            "<header>",
            "<h1>dropfetch</h1>",
            "<p class=\"written\">Written \(timeElement(seconds: writtenAt)) by \(HTMLText.escape(writer)). "
                + (reloads ? "Rewritten when something changes; reloads every \(StatusPage.reloadSeconds) s." : "Printed once.")
                + "</p>",
            summary(),
            "</header>",
            "<main>",
            agentsSection(),
            activeSection(),
            queueSection(),
            waitingSection(),
        ]
        if reloads { parts.insert("<meta http-equiv=\"refresh\" content=\"\(StatusPage.reloadSeconds)\">", at: 6) }
        if !orphaned.isEmpty { parts.append(orphanedSection()) }
        parts += [heldSection(), recentSection(), classSection(), throughputSection()]
        if let scheduleFacts { parts.append(scheduleSection(scheduleFacts)) }
        parts += ["</main>", "</body>", "</html>"]
        return parts.joined(separator: "\n") + "\n"
    }

    /// The counts at a glance, as a description list.
    private func summary() -> String {
        let alive = agents.members.filter { isAlive($0) }.count
        let items: [(String, String)] = [
            ("Active", "\(active.count)"), ("Queued", "\(queue.total)"), ("Waiting", "\(waiting.count)"),
            ("Held", "\(status.held.count)"), ("Agents running", "\(alive) of \(agents.members.count)"),
        ]
        return "<dl class=\"summary\">" + items.map { "<div><dt>\($0.0)</dt><dd>\($0.1)</dd></div>" }.joined() + "</dl>"
    }

    func isAlive(_ member: AgentRoster.Member) -> Bool { member.alive && member.name != stoppedAgent }

    /// A section with a heading and either a table or a sentence saying it is empty.
    func section(_ id: String, _ heading: String, table: String?, empty: String, note: String? = nil) -> String {
        var lines = ["<section id=\"\(id)\" aria-labelledby=\"\(id)-h\">", "<h2 id=\"\(id)-h\">\(heading)</h2>"]
        if let note { lines.append("<p class=\"note\">\(note)</p>") }
        if let table {
            lines.append("<div class=\"scroll\" role=\"region\" aria-labelledby=\"\(id)-h\" tabindex=\"0\">\n" + table + "\n</div>")
        } else {
            lines.append("<p class=\"empty\">\(empty)</p>")
        }
        lines.append("</section>")
        return lines.joined(separator: "\n")
    }

    /// One table row before it is placed: the job (or agent, or class) it is about, its state, its cells.
    struct Row {
        var job: String
        var state: String
        /// `<td…>` elements, one per column after the first.
        var cells: [String]
    }

    /// A table with a caption, column headers (`scope="col"`) and one row per `Row`, its name as the
    /// row header (`scope="row"`); nil without rows. Each cell carries its column's name
    /// (`data-label`), which a phone shows beside the value when rows become cards.
    /// `data-job` and `data-state` say which job a row is and in what state, for scripts and tests.
    func table(_ caption: String, _ columns: [String], numeric: Set<Int> = [], rows: [Row]) -> String? {
        guard !rows.isEmpty else { return nil }
        let head = columns.enumerated().map { index, name in
            "<th scope=\"col\"\(numeric.contains(index) ? " class=\"num\"" : "")>\(name)</th>"
        }.joined()
        let body = rows.map { row in
            let cells = row.cells.enumerated().map { index, cell in
                let label = index + 1 < columns.count ? columns[index + 1] : ""
                return "<td data-label=\"\(label)\"" + cell.dropFirst(3)
            }
            return "<tr data-job=\"\(HTMLText.escape(row.job))\" data-state=\"\(HTMLText.escape(row.state))\">"
                + "<th scope=\"row\">\(HTMLText.escape(row.job))</th>" + cells.joined() + "</tr>"
        }
        return "<table>\n<caption>\(caption)</caption>\n<thead><tr>\(head)</tr></thead>\n<tbody>\n"
            + body.joined(separator: "\n") + "\n</tbody>\n</table>"
    }

    func row(job: String, state: String, cells: [String]) -> Row { Row(job: job, state: state, cells: cells) }

    /// A `<td>` of escaped text: `numeric` right-aligns it, `wraps` lets a long URL or message wrap.
    func cell(_ text: String, numeric: Bool = false, wraps: Bool = false) -> String {
        HTMLText.element("td", numeric ? "class=\"num\"" : wraps ? "class=\"long\"" : "", text: text)
    }

    /// A `<time>` of Unix `seconds`: local time with its offset to read, UTC in `datetime`. Absolute,
    /// never "in 28s", which would go stale on a page an idle agent does not rewrite (issue 36).
    func timeElement(seconds: Int64) -> String {
        HTMLText.element("time", "datetime=\"\(Timestamp.format(seconds: seconds))\"", text: Timestamp.local(seconds: seconds))
    }

    /// A `<td>` holding `timeElement(seconds:)`.
    func timeCell(seconds: Int64) -> String { "<td>" + timeElement(seconds: seconds) + "</td>" }

    /// A state as a word in a colored badge (the word carries the meaning; the color only helps).
    func badge(_ state: String) -> String {
        "<td><span class=\"badge s-\(HTMLText.escape(state))\">\(HTMLText.escape(state))</span></td>"
    }
}
