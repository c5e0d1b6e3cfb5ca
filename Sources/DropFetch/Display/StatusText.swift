/// `dropfetch status` for people: a summary line, then aligned tables of the active downloads
/// (progress, speed, ETA), the jobs waiting (next try, last error), the held jobs and the recent
/// results, sizes in KiB/MiB/GiB.
public enum StatusText {
    /// The text of `status`, with relative times ("in 28s") counted from `now` (Unix seconds).
    public static func render(_ status: SpoolStatus, now: Int64) -> String {
        let active = status.active.filter { !status.isOrphaned($0) }
        let waiting = status.waiting.filter { !status.isOrphaned($0) }
        let orphaned = (status.active + status.waiting).filter(status.isOrphaned).sorted { $0.job < $1.job }
        var lines = ["inbox: \(status.inbox)   active: \(active.count)   waiting: \(waiting.count)   "
            + "held: \(status.held.count)" + (orphaned.isEmpty ? "" : "   orphaned: \(orphaned.count)")]
        let sections = [
            ("active", StatusText.active(active)),
            ("waiting", StatusText.waiting(waiting, now: now)),
            ("orphaned (agent gone; the next agent to start adopts them)",
             StatusText.orphaned(orphaned)),
            ("held", held(status)),
            ("recent", recent(status.recent)),
        ]
        for (title, table) in sections where !table.isEmpty {
            lines += ["", title + ":"] + table.lines(indent: "  ")
        }
        if !status.fencedAgents.isEmpty {
            lines += ["", "fenced agents (lease ran out: they act on no job until they re-join; others adopt their jobs):"]
                + status.fencedAgents.map { "  " + $0 }
        }
        if let schedule = status.schedule {
            lines += ["", "schedule and quotas:"] + schedule.facts.map { "  \($0.label): \($0.value)" }
        }
        return lines.joined(separator: "\n")
    }

    private static func active(_ records: [StatusRecord]) -> TextTable {
        let limited = records.contains { $0.downloads.contains { $0.state == .running && $0.rateLimit != nil } }
        var columns: [(String, TextTable.Alignment)] = [("JOB", .left), ("FILE", .left), ("DONE", .right), ("SIZE", .right),
                                                        ("%", .right), ("SPEED", .right), ("ETA", .right)]
        if limited { columns.append(("LIMIT", .right)) }
        columns.append(("URL", .left))
        var table = TextTable(columns)
        for record in records {
            for download in record.downloads where download.state == .running {
                let file: String = download.file.map(baseName) ?? "-"
                let size: String = download.size.map(HumanUnits.bytes) ?? "?"
                let percent: String = HumanUnits.percent(bytes: download.bytes, size: download.size).map { "\($0)%" } ?? "-"
                let speed: String = download.bytesPerSecond.map(HumanUnits.rate) ?? "-"
                let eta: Int64? = HumanUnits.eta(bytes: download.bytes, size: download.size,
                                                 bytesPerSecond: download.bytesPerSecond)
                let etaText: String = eta.map { HumanUnits.duration(seconds: $0) } ?? "-"
                var row: [String] = [record.job, file, HumanUnits.bytes(download.bytes), size, percent, speed, etaText]
                if limited { row.append(download.rateLimit.map(HumanUnits.rate) ?? "-") }
                row.append(download.url)
                table.add(row)
            }
        }
        return table
    }

    private static func waiting(_ records: [StatusRecord], now: Int64) -> TextTable {
        var table = TextTable([("JOB", .left), ("STATE", .left), ("NEXT TRY", .left), ("ATTEMPTS", .right),
                               ("DONE", .right), ("LAST ERROR", .left)])
        for record in records {
            table.add([record.job, record.state.rawValue, nextTry(record.retryAt, now: now), "\(record.attempts)",
                       HumanUnits.bytes(record.downloads.reduce(0) { $0 + $1.bytes }), lastError(record)])
        }
        return table
    }

    /// Jobs in the work folder of an agent that is gone: what its state file last said, no speed or ETA.
    private static func orphaned(_ records: [StatusRecord]) -> TextTable {
        var table = TextTable([("JOB", .left), ("AGENT", .left), ("STATE", .left), ("DONE", .right), ("SIZE", .right),
                               ("%", .right)])
        for record in records {
            let bytes = record.downloads.reduce(0) { $0 + $1.bytes }
            let sizes = record.downloads.compactMap(\.size)
            let size: Int64? = sizes.count == record.downloads.count && !sizes.isEmpty ? sizes.reduce(0, +) : nil
            let percent = HumanUnits.percent(bytes: bytes, size: size).map { "\($0)%" } ?? "-"
            table.add([record.job, record.agent, "orphaned (was \(record.state.rawValue))", HumanUnits.bytes(bytes),
                       size.map(HumanUnits.bytes) ?? "?", percent])
        }
        return table
    }

    private static func held(_ status: SpoolStatus) -> TextTable {
        var table = TextTable([("JOB", .left), ("ATTEMPTS", .right), ("DONE", .right), ("LAST ERROR", .left)])
        for name in status.held {
            guard let record = status.heldStates[name] else {
                table.add([name, "-", "-", "-"])
                continue
            }
            table.add([name, "\(record.attempts)", HumanUnits.bytes(record.downloads.reduce(0) { $0 + $1.bytes }),
                       lastError(record)])
        }
        return table
    }

    private static func recent(_ records: [StatusRecord]) -> TextTable {
        var table = TextTable([("FINISHED", .left), ("STATE", .left), ("JOB", .left), ("SIZE", .right),
                               ("TIME", .right), ("ERROR", .left)])
        for record in records {
            let seconds = record.downloads.reduce(0) { $0 + $1.seconds }
            table.add([localTime(record.finished), record.state.rawValue, record.job,
                       HumanUnits.bytes(record.downloads.reduce(0) { $0 + $1.bytes }), elapsed(seconds),
                       record.error.map { describe($0) } ?? ""])
        }
        return table
    }

    /// The next try in local time with its offset (issue 36): `2026-11-22T03:30:30+05:30 (in 28s)`,
    /// `… (due)` once past, `-` when none planned. Relative to `now`, for text printed at once (the
    /// status page writes absolute times only).
    static func nextTry(_ retryAt: String?, now: Int64) -> String {
        guard let retryAt else { return "-" }
        guard let due = Timestamp.parse(retryAt) else { return retryAt }
        return Timestamp.local(seconds: due) + (due > now ? " (in \(HumanUnits.duration(seconds: due - now)))" : " (due)")
    }

    /// A status file's UTC time as a person reads it: local time with its offset; `-` when absent,
    /// text that is not a UTC timestamp as it is.
    static func localTime(_ utc: String?) -> String {
        guard let utc else { return "-" }
        return Timestamp.parse(utc).map { Timestamp.local(seconds: $0) } ?? utc
    }

    /// The newest error a job met: a download's, else the job's; `-` when none.
    static func lastError(_ record: StatusRecord) -> String {
        (record.downloads.compactMap(\.error).first ?? record.error).map { describe($0) } ?? "-"
    }

    private static func describe(_ failure: Failure) -> String {
        let text = failure.kind.rawValue + ": " + failure.message
        return text.count > 100 ? String(text.prefix(99)) + "…" : text
    }

    /// `0.4s` under a minute, then `3m05s`.
    static func elapsed(_ seconds: Double) -> String {
        seconds < 60 ? HumanUnits.fixed(seconds, digits: 1) + "s" : HumanUnits.duration(seconds: Int64(seconds))
    }

    private static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
