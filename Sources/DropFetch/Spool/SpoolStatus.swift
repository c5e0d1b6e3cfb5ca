import Glibc

/// What `dropfetch status` shows, read from the spool alone (docs/architecture.md: the list view reads the
/// store), so it works whether or not an agent runs.
public struct SpoolStatus: Sendable {
    public var inbox: Int
    /// State files of running jobs.
    public var active: [StatusRecord]
    /// State files of claimed jobs that are queued or waiting for a retry.
    public var waiting: [StatusRecord]
    /// Jobs in hold/ (name only: they have no state).
    public var held: [String]
    /// The newest status records of done/ and failed/, newest first.
    public var recent: [StatusRecord]

    public static func read(config: Config, recentLimit: Int = 20) -> SpoolStatus {
        let root = Agent.absolute(config.spool)
        let spool = Spool(root: root, agentID: config.agentID ?? Agent.hostName(), durable: false)
        let inboxCount = spool.scanInbox().count
        var active: [StatusRecord] = []
        var waiting: [StatusRecord] = []
        for agent in ((try? FileSystem.entries(of: spool.workRoot)) ?? []).map(\.name) where !agent.hasPrefix(".") {
            let folder = spool.workRoot + "/" + agent
            for name in ((try? FileSystem.entries(of: folder)) ?? []).map(\.name) where Spool.isJobName(name) {
                let record = readRecord(folder + "/" + Spool.stateName(forJob: name))
                    ?? StatusRecord(job: name, state: .queued, className: "default", priority: 0, agent: agent,
                                    submitted: "")
                if record.state == .running { active.append(record) } else { waiting.append(record) }
            }
        }
        let held = ((try? FileSystem.entries(of: spool.hold)) ?? []).map(\.name).filter(Spool.isJobName).sorted()
        var finished: [(modified: Int64, path: String)] = []
        for folder in [spool.done, spool.failed] {
            for entry in (try? FileSystem.entries(of: folder)) ?? [] where entry.name.hasSuffix(".status.json") {
                let path = folder + "/" + entry.name
                guard !entry.name.hasPrefix("."), let info = try? FileSystem.lstatus(path) else { continue }
                finished.append((Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec), path))
            }
        }
        let recent = finished.sorted { $0.modified > $1.modified }.prefix(recentLimit).compactMap { readRecord($0.path) }
        return SpoolStatus(inbox: inboxCount, active: active.sorted { $0.job < $1.job },
                           waiting: waiting.sorted { $0.job < $1.job }, held: held, recent: recent)
    }

    /// The number of jobs in a hold/ folder (one readdir(3)); 0 when it cannot be read.
    public static func heldCount(in hold: String) -> Int {
        ((try? FileSystem.entries(of: hold)) ?? []).count { Spool.isJobName($0.name) }
    }

    private static func readRecord(_ path: String) -> StatusRecord? {
        guard let file = try? FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW),
              let bytes = try? file.readAll(limit: 1 << 22) else { return nil }
        return StatusRecord.decode(bytes)
    }

    /// One JSON object: `inbox`, `active`, `waiting`, `held`, `recent` (docs/cli.md).
    public func json() -> String {
        func list(_ records: [StatusRecord]) -> String {
            "[" + records.map { String(decoding: $0.encoded().dropLast(), as: UTF8.self) }.joined(separator: ",\n") + "]"
        }
        let heldRecords = held.map {
            StatusRecord(job: $0, state: .queued, className: "default", priority: 0, agent: "", submitted: "")
        }
        return "{\n\"inbox\": \(inbox),\n\"active\": \(list(active)),\n\"waiting\": \(list(waiting)),\n"
            + "\"held\": \(list(heldRecords)),\n\"recent\": \(list(recent))\n}"
    }

    /// A short table for people.
    public func text() -> String {
        var lines = ["inbox: \(inbox)   active: \(active.count)   waiting: \(waiting.count)   held: \(held.count)"]
        for record in active {
            for download in record.downloads where download.state == .running {
                let size = download.size.map { " of \($0)" } ?? ""
                let percent = download.size.map { $0 > 0 ? " (\(download.bytes * 100 / $0)%)" : "" } ?? ""
                let speed = download.bytesPerSecond.map { "  \(SpoolStatus.rate($0))" } ?? ""
                let limit = download.rateLimit.map { "  (limit \(SpoolStatus.rate($0)))" } ?? ""
                lines.append("  running  \(record.job)  \(download.bytes)\(size) bytes\(percent)\(speed)\(limit)  \(download.url)")
            }
        }
        for record in waiting {
            lines.append("  \(record.state.rawValue)  \(record.job)\(record.retryAt.map { "  retry at \($0)" } ?? "")")
        }
        for name in held { lines.append("  held     \(name)") }
        if !recent.isEmpty { lines.append("recent:") }
        for record in recent {
            let error = record.error.map { "  \($0.kind.rawValue): \($0.message)" } ?? ""
            lines.append("  \(record.finished ?? "")  \(record.state.rawValue)  \(record.job)\(error)")
        }
        return lines.joined(separator: "\n")
    }

    /// Bytes per second for people: `850 B/s`, `200.0 KB/s`, `4.5 MB/s` (powers of 1024, as the config's sizes).
    static func rate(_ bytesPerSecond: Int64) -> String {
        if bytesPerSecond < 1024 { return "\(bytesPerSecond) B/s" }
        let (unit, scale): (String, Int64) = bytesPerSecond < 1 << 20 ? ("KB", 1 << 10) : ("MB", 1 << 20)
        let tenths = (bytesPerSecond * 10 + scale / 2) / scale
        return "\(tenths / 10).\(tenths % 10) \(unit)/s"
    }
}
