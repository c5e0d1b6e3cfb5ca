/// The sections of the status page, one table each; every value from the spool goes through
/// HTMLText, every URL through Redaction first.
extension StatusPage {
    func agentsSection() -> String {
        let rows = agents.members.map { member in
            let state = member.name == stoppedAgent ? "stopped" : member.state
            return row(job: member.name, state: state, cells: [badge(state), cell("\(member.jobs)", numeric: true)])
        }
        return section("agents", "Agents", table: table("Agents sharing this spool and whether each runs (a running agent holds its work folder's lock and renews its lease; a fenced one acts on no job until it re-joins)",
                                                       ["Agent", "State", "Jobs claimed"], numeric: [2], rows: rows),
                       empty: "No agent has used this spool yet.")
    }

    func activeSection() -> String {
        var rows: [Row] = []
        for record in active {
            let running = record.downloads.filter { $0.state == .running }
            for download in running.isEmpty ? record.downloads.prefix(1).map({ $0 }) : running {
                let eta = HumanUnits.eta(bytes: download.bytes, size: download.size, bytesPerSecond: download.bytesPerSecond)
                rows.append(row(job: record.job, state: "running", cells: [
                    badge("running"),
                    progress(bytes: download.bytes, size: download.size, job: record.job),
                    cell(HumanUnits.bytes(download.bytes), numeric: true),
                    cell(download.size.map(HumanUnits.bytes) ?? "?", numeric: true),
                    cell(download.bytesPerSecond.map(HumanUnits.rate) ?? "-", numeric: true),
                    cell(eta.map { HumanUnits.duration(seconds: $0) } ?? "-", numeric: true),
                    cell(record.agent),
                    cell(Redaction.url(download.url), wraps: true),
                ]))
            }
        }
        return section("active", "Active downloads",
                       table: table("Downloads running now, with progress, speed and time left",
                                    ["Job", "State", "Progress", "Done", "Size", "Speed", "ETA", "Agent", "URL"],
                                    numeric: [3, 4, 5, 6], rows: rows),
                       empty: "Nothing is downloading.")
    }

    /// A `<progress>` bar with the percentage beside it; without a size, an indeterminate bar.
    private func progress(bytes: Int64, size: Int64?, job: String) -> String {
        guard let percent = HumanUnits.percent(bytes: bytes, size: size) else {
            return "<td class=\"bar\"><progress aria-label=\"\(HTMLText.escape(job)): size unknown\"></progress> <span>?</span></td>"
        }
        return "<td class=\"bar\"><progress max=\"100\" value=\"\(percent)\" aria-label=\"\(HTMLText.escape(job)): \(percent)%\">"
            + "\(percent)%</progress> <span>\(percent)%</span></td>"
    }

    func queueSection() -> String {
        let rows = queue.entries.enumerated().map { index, entry in
            row(job: entry.job, state: "queued", cells: [
                badge("queued"),
                cell("\(index + 1)", numeric: true),
                cell("\(entry.priority)", numeric: true),
                cell(entry.className),
                cell(entry.claimedBy.map { "claimed by \($0)" } ?? (entry.folder.isEmpty ? "inbox" : "inbox/" + entry.folder)),
                entry.arrival > 0 ? timeCell(seconds: entry.arrival / 1_000_000_000) : cell("-"),
            ])
        }
        let note = queue.total > queue.entries.count ? "The first \(queue.entries.count) of \(queue.total) queued jobs." : nil
        return section("queue", "Queue", table: table("Jobs in the order they will start: higher priority first, then by arrival",
                                                      ["Job", "State", "Position", "Priority", "Class", "Where", "Arrived"],
                                                      numeric: [2, 3], rows: rows),
                       empty: "The queue is empty.", note: note)
    }

    func waitingSection() -> String {
        let rows = waiting.map { record in
            row(job: record.job, state: record.state.rawValue, cells: [
                badge(record.state.rawValue),
                cell(StatusText.lastError(record) == "-" ? "waiting for its turn" : StatusText.lastError(record), wraps: true),
                record.retryAt.flatMap(Timestamp.parse).map { timeCell(seconds: $0) } ?? cell(record.retryAt ?? "-"),
                cell("\(record.attempts)", numeric: true),
                cell(HumanUnits.bytes(record.downloads.reduce(0) { $0 + $1.bytes }), numeric: true),
                cell(record.agent),
            ])
        }
        return section("waiting", "Waiting", table: table("Claimed jobs waiting for a retry, free space or a file name's owner",
                                                          ["Job", "State", "Reason", "Next try", "Attempts", "Done", "Agent"],
                                                          numeric: [4, 5], rows: rows),
                       empty: "No job is waiting.")
    }

    func orphanedSection() -> String {
        let rows = orphaned.map { record in
            row(job: record.job, state: "orphaned", cells: [
                badge("orphaned"), cell("was " + record.state.rawValue), cell(record.agent),
                cell(HumanUnits.bytes(record.downloads.reduce(0) { $0 + $1.bytes }), numeric: true),
            ])
        }
        return section("orphaned", "Orphaned", table: table("Jobs of agents that are gone; the next agent to start adopts them",
                                                            ["Job", "State", "Last state", "Agent", "Done"], numeric: [4], rows: rows),
                       empty: "")
    }

    func heldSection() -> String {
        let rows = status.held.map { name in
            let record = status.heldStates[name]
            return row(job: name, state: "held", cells: [
                badge("held"),
                cell(record.map { "\($0.attempts)" } ?? "-", numeric: true),
                cell(record.map { HumanUnits.bytes($0.downloads.reduce(0) { $0 + $1.bytes }) } ?? "-", numeric: true),
                cell(record.map(StatusText.lastError) ?? "-", wraps: true),
            ])
        }
        return section("held", "Held", table: table("Jobs in hold/, waiting for dropfetch release",
                                                    ["Job", "State", "Attempts", "Done", "Last error"], numeric: [2, 3], rows: rows),
                       empty: "No job is held.")
    }

    func recentSection() -> String {
        let rows = status.recent.map { record in
            row(job: record.job, state: record.state.rawValue, cells: [
                badge(record.state.rawValue),
                record.finished.flatMap(Timestamp.parse).map { timeCell(seconds: $0) } ?? cell(record.finished ?? "-"),
                cell(HumanUnits.bytes(record.downloads.reduce(0) { $0 + $1.bytes }), numeric: true),
                cell(StatusText.elapsed(record.downloads.reduce(0) { $0 + $1.seconds }), numeric: true),
                cell(record.error?.kind.rawValue ?? ""),
                cell(record.error.map { Redaction.url($0.message) } ?? "", wraps: true),
            ])
        }
        return section("recent", "Recent results",
                       table: table("The last \(StatusPage.recentLimit) jobs filed in done/ or failed/, newest first",
                                    ["Job", "State", "Finished", "Size", "Time", "Error", "Message"], numeric: [3, 4], rows: rows),
                       empty: "No job has finished yet.")
    }

    func classSection() -> String {
        var counts: [String: [Int]] = [:]
        func count(_ className: String, _ column: Int) { counts[className, default: [0, 0, 0, 0, 0, 0]][column] += 1 }
        for record in active { count(record.className, 0) }
        for entry in queue.entries { count(entry.className, 1) }
        for record in waiting { count(record.className, 2) }
        for name in status.held { count(status.heldStates[name]?.className ?? "default", 3) }
        for record in status.recent {
            if record.state == .done { count(record.className, 4) } else { count(record.className, 5) }
        }
        let rows = counts.keys.sorted().map { name in
            row(job: name, state: "class", cells: counts[name, default: []].map { cell("\($0)", numeric: true) })
        }
        return section("classes", "Per class", table: table("Jobs per class: done and failed among the last \(StatusPage.recentLimit) results"
                                                                + (queue.total > queue.entries.count ? ", queued among the first \(queue.entries.count)" : ""),
                                                            ["Class", "Active", "Queued", "Waiting", "Held", "Done", "Failed"],
                                                            numeric: [1, 2, 3, 4, 5, 6], rows: rows),
                       empty: "No jobs to count.")
    }

    func throughputSection() -> String {
        var lines = ["<section id=\"throughput\" aria-labelledby=\"throughput-h\">", "<h2 id=\"throughput-h\">Throughput, last hour</h2>"]
        if let throughput {
            let total = throughput.perMinute.reduce(0, +)
            let peak = throughput.perMinute.max() ?? 0
            let summary = "Agent \(throughput.agent) received \(HumanUnits.bytes(total)) in the last hour; "
                + "busiest minute \(HumanUnits.bytes(peak))."
            lines.append("<figure>")
            lines.append(Sparkline.svg(throughput.perMinute, label: summary))
            lines.append("<figcaption>\(HTMLText.escape(summary)) One bar per minute, the newest on the right.</figcaption>")
            lines.append("</figure>")
        } else {
            lines.append("<p class=\"empty\">No history here: a running agent counts bytes per minute in memory and draws them "
                + "on the page it writes (<code>status_page</code>); <code>dropfetch status --html</code> has none.</p>")
        }
        lines.append("</section>")
        return lines.joined(separator: "\n")
    }

    /// The schedule window and quotas (issue 27): what `scheduleFacts` says, as a description list.
    func scheduleSection(_ facts: [(label: String, value: String)]) -> String {
        let items = facts.map { "<div><dt>\(HTMLText.escape($0.label))</dt><dd>\(HTMLText.escape($0.value))</dd></div>" }
        return "<section id=\"schedule\" aria-labelledby=\"schedule-h\">\n<h2 id=\"schedule-h\">Schedule and quotas</h2>\n"
            + "<dl class=\"facts\">" + items.joined() + "</dl>\n</section>"
    }
}
