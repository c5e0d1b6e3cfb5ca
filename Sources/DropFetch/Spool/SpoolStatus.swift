import Glibc

/// What `dropfetch status` shows, read from the spool alone (docs/architecture.md: the list view reads the
/// store), so it works whether or not an agent runs.
public struct SpoolStatus: Sendable {
    public var inbox: Int
    /// State files of running jobs.
    public var active: [StatusRecord]
    /// State files of claimed jobs that are queued or waiting for a retry.
    public var waiting: [StatusRecord]
    /// Jobs in hold/ by file name.
    public var held: [String]
    /// The state a held job took along into hold/ (attempts, partial data, last error), by file name.
    public var heldStates: [String: StatusRecord] = [:]
    /// The newest status records of done/ and failed/, newest first.
    public var recent: [StatusRecord]
    /// Agents whose work folder's lock nobody holds (AgentLiveness): their jobs are orphaned until
    /// an agent adopts them, and their state files' progress is stale.
    public var goneAgents: Set<String> = []
    /// Agents whose lease ran out while their process runs (AgentLiveness.State.fenced): they act on
    /// none of their jobs until they re-join, and another agent may adopt those (DESIGN.md §10).
    public var fencedAgents: [String] = []
    /// The schedule window and quotas now; nil without `schedule:` and `quota:`.
    public var schedule: ScheduleStatus?

    /// Whether `record` (of `active` or `waiting`) belongs to an agent that is gone.
    public func isOrphaned(_ record: StatusRecord) -> Bool { goneAgents.contains(record.agent) }

    /// `now`: seconds since the epoch, for the schedule's facts.
    public static func read(config: Config, recentLimit: Int = 20, now: Int64 = Int64(time(nil))) -> SpoolStatus {
        let root = Agent.absolute(config.spool)
        let spool = Spool(root: root, agentID: config.agentID ?? Agent.hostName(), durable: false)
        let inboxCount = spool.scanInbox().count
        var active: [StatusRecord] = []
        var waiting: [StatusRecord] = []
        var gone: Set<String> = []
        var fenced: [String] = []
        // Lease ages want more than whole seconds: the liveness judgement reads the clock itself.
        let wallNanoseconds = AgentClock().wallNanoseconds()
        for agent in ((try? FileSystem.entries(of: spool.workRoot)) ?? []).map(\.name) where !agent.hasPrefix(".") {
            let folder = FileSystem.join(spool.workRoot, agent)
            let names = ((try? FileSystem.entries(of: folder)) ?? []).map(\.name).filter(Spool.isJobName)
            let state = AgentLiveness.state(workFolder: folder, now: wallNanoseconds)
            let alive = names.isEmpty || state != .gone
            if !alive { gone.insert(agent) }
            if state == .fenced { fenced.append(agent) }
            for name in names {
                var record = readRecord(folder + "/" + Spool.stateName(forJob: name))
                    ?? StatusRecord(job: name, state: .queued, className: "default", priority: 0, agent: agent,
                                    submitted: "")
                // The folder says whose it is; its stale speed is not shown for a gone agent.
                record.agent = agent
                if !alive {
                    for index in record.downloads.indices {
                        record.downloads[index].bytesPerSecond = nil
                        record.downloads[index].connections = nil
                    }
                }
                if record.state == .running { active.append(record) } else { waiting.append(record) }
            }
        }
        let held = ((try? FileSystem.entries(of: spool.hold)) ?? []).map(\.name).filter(Spool.isJobName).sorted()
        var heldStates: [String: StatusRecord] = [:]
        for name in held {
            heldStates[name] = readRecord(spool.hold + "/" + Spool.stateName(forJob: name))
                ?? classified(heldJob: FileSystem.join(spool.hold, name), config: config)
        }
        let recent = RecentFilings.read(root: root, done: spool.done, failed: spool.failed, limit: recentLimit)
            ?? scanRecent(done: spool.done, failed: spool.failed, limit: recentLimit)
        return SpoolStatus(inbox: inboxCount, active: active.sorted { $0.job < $1.job },
                           waiting: waiting.sorted { $0.job < $1.job }, held: held, heldStates: heldStates, recent: recent,
                           goneAgents: gone, fencedAgents: fenced.sorted(),
                           schedule: ScheduleStatus.read(config: config, now: now))
    }

    /// The newest `limit` status records of done/ and failed/ by their files' modification times,
    /// newest first: an lstat(2) of every status file, for when the filing journals cannot answer.
    static func scanRecent(done: String, failed: String, limit: Int) -> [StatusRecord] {
        var finished: [(modified: Int64, path: String)] = []
        for folder in [done, failed] {
            for entry in (try? FileSystem.entries(of: folder)) ?? [] where entry.name.hasSuffix(".status.json") {
                let path = FileSystem.join(folder, entry.name)
                guard !entry.name.hasPrefix("."), let info = try? FileSystem.lstatus(path) else { continue }
                finished.append((Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec), path))
            }
        }
        return finished.sorted { $0.modified > $1.modified }.prefix(limit).compactMap { readRecord($0.path) }
    }

    /// The number of jobs in a hold/ folder (one readdir(3)); 0 when it cannot be read.
    public static func heldCount(in hold: String) -> Int {
        ((try? FileSystem.entries(of: hold)) ?? []).count { Spool.isJobName($0.name) }
    }

    private static func readRecord(_ path: String) -> StatusRecord? {
        Spool.readRecord(at: path)
    }

    /// A job held before it ran (no state taken along): its class and priority as the config
    /// would give them (JobAcceptance), from its job file; nil when that cannot be read or parsed.
    private static func classified(heldJob path: String, config: Config) -> StatusRecord? {
        guard case .success(let bytes) = JobFileReader.read(path, limit: config.limits.maxJobFileSize),
              let spec = try? JobFileParser.parse(bytes),
              case .success(let accepted) = JobAcceptance.check(spec, folder: "", config: config) else { return nil }
        var record = StatusRecord(job: FileSystem.baseName(of: path), state: .queued, className: accepted.className,
                                  priority: accepted.priority, agent: "", submitted: "")
        record.downloads = spec.downloads.map { DownloadStatus(url: Redaction.url($0.urls[0]), file: nil, state: .queued) }
        return record
    }

    /// One JSON object: `inbox`, `active`, `waiting`, `held`, `recent`, and `schedule` and `quotas`
    /// when configured, `fenced_agents` (docs/cli.md); each entry of `active` and `waiting` also
    /// says `agent_alive`.
    public func json() -> String {
        func list(_ records: [StatusRecord]) -> String {
            "[" + records.map { String(decoding: $0.encoded().dropLast(), as: UTF8.self) }.joined(separator: ",\n") + "]"
        }
        func claimed(_ records: [StatusRecord]) -> String {
            "[" + records.map { record in
                var text = String(decoding: record.encoded().dropLast(), as: UTF8.self)
                while text.last?.isWhitespace == true { text.removeLast() }
                if text.last == "}" { text.removeLast() }
                while text.last?.isWhitespace == true { text.removeLast() }
                return text + ",\n  \"agent_alive\": \(!isOrphaned(record))\n}"
            }.joined(separator: ",\n") + "]"
        }
        let heldRecords = held.map { name in
            guard var record = heldStates[name] else {
                return StatusRecord(job: name, state: .queued, className: "default", priority: 0, agent: "", submitted: "")
            }
            // What it was doing when held is over: it waits for a release, and so does each of
            // its downloads that was running (no speed, no connections: nothing is open).
            record.state = .queued
            record.retryAt = nil
            for index in record.downloads.indices where record.downloads[index].state == .running {
                record.downloads[index].state = .queued
                record.downloads[index].bytesPerSecond = nil
                record.downloads[index].connections = nil
            }
            return record
        }
        return "{\n\"inbox\": \(inbox),\n\"active\": \(claimed(active)),\n\"waiting\": \(claimed(waiting)),\n"
            + "\"held\": \(list(heldRecords)),\n\"recent\": \(list(recent)),\n"
            + "\"fenced_agents\": " + SpoolStatus.jsonArray(fencedAgents)
            + (schedule.map { ",\n" + $0.jsonMembers() } ?? "") + "\n}"
    }

    /// `["a", "b"]` (JSONText escapes each name: a work folder's name is a peer's to choose).
    private static func jsonArray(_ names: [String]) -> String {
        var json = JSONText()
        json.beginObject()
        json.beginArray("names")
        for name in names { json.element(name) }
        json.endArray()
        json.endObject()
        let text = String(decoding: json.bytes, as: UTF8.self)
        guard let open = text.firstIndex(of: "["), let close = text.lastIndex(of: "]") else { return "[]" }
        return String(text[open...close])
    }

    /// Aligned tables for people (StatusText), relative times counted from now.
    public func text() -> String { StatusText.render(self, now: Int64(time(nil))) }
}
