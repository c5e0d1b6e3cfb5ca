import Glibc
import Logging

/// The `metrics_file`: Prometheus text exposition format (version 0.0.4) for node-exporter's
/// textfile collector, replaced atomically so the collector never reads half a file.
///
/// Counters continue across runs (`MetricsCounters`, persisted in the spool); bytes count as
/// they arrive. The file is written when something changed, at most once a second, so an idle
/// agent writes nothing and sets no timer for it. A failing write warns once, then at most once
/// an hour, and says so when it works again.
final class MetricsFile {
    /// What the agent holds now, read each loop turn (cheap: no system call).
    struct Gauges: Equatable {
        var active = 0
        var ready = 0
        var waiting = 0
        var inbox = 0
        /// The agent is fenced: it acts on no job until it re-joins (DESIGN.md §10).
        var fenced = false
        /// With `schedule:`: `limits.rate_limit` (0: none) and `concurrency.total` in force, and whether a pause is.
        var rateLimit: Int64?
        var concurrency: Int?
        var paused: Bool?
        /// With `quota:`: each quota's bytes used (all agents) and its limit.
        var quotas: [Quota] = []

        struct Quota: Equatable {
            var period: String
            var className: String
            var used: Int64
            var bytes: Int64
        }

        /// The limits and quota use `ScheduleGate` put in force.
        mutating func addSchedule(_ gate: ScheduleGate) {
            if !gate.config.schedule.isEmpty {
                rateLimit = gate.state.bandwidthLimits(gate.config).total
                concurrency = gate.state.admissionLimits(gate.config).total
                paused = gate.state.pause != nil
            }
            quotas = gate.quotas.map {
                Quota(period: $0.quota.period.rawValue, className: $0.quota.className ?? "", used: $0.used, bytes: $0.quota.bytes)
            }
        }
    }

    /// The shortest time between two writes, in ms.
    static let interval: Int64 = 1000
    /// The shortest time between two warnings about one failing file, in ms.
    static let warningInterval: Int64 = 3_600_000

    let path: String
    let agent: String
    /// The agent's loop marks each turn's start and end here (dropfetch_loop_stall_seconds).
    var loopStall = LoopStall()
    /// `<spool>/.metrics.<agent>.json`.
    let countersPath: String
    /// `<spool>/hold`, counted for the held gauge when the file is written.
    let holdFolder: String
    private let logger: Logger
    /// What earlier runs counted.
    private var carried = MetricsCounters()
    /// What this run counted.
    private var current = MetricsCounters()
    private var changed = true
    private var writtenGauges: Gauges?
    private var lastWrite = Int64.min
    /// When each failing file was last warned about (monotonic ms).
    private var warnedAt: [String: Int64] = [:]

    init(path: String, agent: String, spoolRoot: String, holdFolder: String, logger: Logger) {
        self.path = path
        self.agent = agent
        countersPath = spoolRoot + "/.metrics." + agent + ".json"
        self.holdFolder = holdFolder
        self.logger = logger
    }

    /// Bytes received by the transfers of each class in this run (TransferMeter), unfinished
    /// downloads included.
    var bytesByClass: [String: Int64] {
        get { current.receivedBytes }
        set {
            guard newValue != current.receivedBytes else { return }
            current.receivedBytes = newValue
            changed = true
        }
    }

    /// The counters of this run and the earlier ones together.
    var counters: MetricsCounters { carried.adding(current) }

    /// Takes up the counters of earlier runs; a missing file starts from zero, an unreadable one
    /// too, with a warning.
    func loadCounters() {
        do {
            let file = try FileDescriptor.open(countersPath, flags: O_RDONLY | O_NOFOLLOW)
            let bytes = try file.readAll(limit: 1 << 20)
            guard let saved = MetricsCounters.decode(bytes) else {
                logger.warning("metrics counters unreadable, counting from zero", metadata: ["file": "\(countersPath)"])
                return
            }
            carried = saved
        } catch where error.code == ENOENT {
            return
        } catch {
            logger.warning("cannot read the metrics counters, counting from zero",
                           metadata: ["file": "\(countersPath)", "error": "\(error)"])
        }
    }

    /// Counts a filed job; a done one is the last success, at `now` (the agent's wall clock, seconds).
    func filed(_ record: StatusRecord, now: Int64) {
        current.jobs[record.state.rawValue, default: 0] += 1
        if record.state == .done { current.lastSuccess = now }
        changed = true
    }

    /// Counts an attempt that failed and was scheduled again.
    func retried() {
        current.retries += 1
        changed = true
    }

    /// Counts finished jobs removed under `history:`.
    func historyRemoved(_ count: Int) {
        current.historyRemoved += Int64(count)
        changed = true
    }

    /// Counts a fence: the agent lost its lease and stopped acting on its jobs.
    func fenced() {
        current.fenced += 1
        changed = true
    }

    /// When the file should next be written (monotonic ms): nil while nothing changed.
    func nextWrite(_ gauges: Gauges) -> Int64? {
        guard changed || gauges != writtenGauges else { return nil }
        return lastWrite == .min ? 0 : lastWrite + MetricsFile.interval
    }

    /// Writes the file (and the counters) when something changed and the last write is a second old.
    func writeIfDue(now: Int64, _ gauges: Gauges, on worker: GroupCommit? = nil) {
        guard let due = nextWrite(gauges), now >= due else { return }
        write(now: now, gauges, on: worker)
    }

    /// Writes the counters, then the file, whatever changed: on the `worker` when there is one
    /// (the loop goes on meanwhile), here otherwise and at the end of a run.
    /// `spoolAnswers: false` writes the file alone, here, with no held count: not the counters,
    /// which live in the spool (a fenced agent's may hang).
    func write(now: Int64, _ gauges: Gauges, on worker: GroupCommit? = nil, spoolAnswers: Bool = true) {
        lastWrite = now
        changed = false
        writtenGauges = gauges
        let total = counters
        let agent = agent
        let stall = loopStall.longest(at: MonotonicClock.nanoseconds())
        let task = MetricsWrite(counters: spoolAnswers ? total.encoded() : nil, countersPath: countersPath, path: path,
                                holdFolder: holdFolder) {
            MetricsFile.text(agent: agent, total, gauges, held: $0, stall: stall)
        }
        guard let worker else {
            _ = task.perform()
            return report(task, now: now)
        }
        worker.sync([.task(task)]) { [self] _ in report(task, now: MonotonicClock.now()) }
    }

    /// Warns about a failing write once an hour at most, and says once when it works again.
    private func report(_ task: MetricsWrite, now: Int64) {
        for outcome in task.outcomes {
            guard let error = outcome.error else {
                if warnedAt.removeValue(forKey: outcome.path) != nil {
                    logger.info("\(outcome.what) written again", metadata: ["file": "\(outcome.path)"])
                }
                continue
            }
            if let last = warnedAt[outcome.path], now - last < MetricsFile.warningInterval { continue }
            warnedAt[outcome.path] = now
            logger.warning("cannot write \(outcome.what); next warning in an hour at the earliest",
                           metadata: ["file": "\(outcome.path)", "error": "\(error)"])
        }
    }

    static func text(agent: String, _ counters: MetricsCounters, _ gauges: Gauges, held: Int, stall: Double) -> String {
        let label = "agent=\"\(MetricsFile.labelValue(agent))\""
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            lines += ["# HELP \(name) \(help)", "# TYPE \(name) \(type)"]
            for (labels, value) in samples { lines.append("\(name){\(label)\(labels)} \(value)") }
        }
        metric("dropfetch_build_info", "gauge", "The dropfetch version; always 1.",
               [(",version=\"\(MetricsFile.labelValue(DropFetchVersion.string))\"", "1")])
        metric("dropfetch_jobs_total", "counter", "Jobs filed in done/ or failed/, counted across runs.",
               ["done", "failed", "cancelled"].map { (",state=\"\($0)\"", "\(counters.jobs[$0, default: 0])") })
        metric("dropfetch_downloaded_bytes_total", "counter",
               "Bytes received from servers, counted as they arrive (unfinished downloads included).",
               [("", "\(counters.totalReceived)")])
        metric("dropfetch_received_bytes_total", "counter", "Bytes received by class, counted as they arrive.",
               counters.receivedBytes.sorted { $0.key < $1.key }.map {
                   (",class=\"\(MetricsFile.labelValue($0.key))\"", "\($0.value)")
               })
        metric("dropfetch_retries_total", "counter", "Attempts that failed and were scheduled again.",
               [("", "\(counters.retries)")])
        metric("dropfetch_history_removed_total", "counter", "Finished jobs whose records history: removed, counted across runs.",
               [("", "\(counters.historyRemoved)")])
        metric("dropfetch_last_success_timestamp_seconds", "gauge",
               "When a job was last filed as done (Unix time); 0 before the first.", [("", "\(counters.lastSuccess ?? 0)")])
        metric("dropfetch_fenced", "gauge", "1 while the agent is fenced (its lease ran out: it acts on no job until it re-joins), else 0.",
               [("", gauges.fenced ? "1" : "0")])
        metric("dropfetch_fenced_total", "counter", "Times the agent was fenced, counted across runs.", [("", "\(counters.fenced)")])
        metric("dropfetch_transfers_active", "gauge", "Downloads running now.", [("", "\(gauges.active)")])
        metric("dropfetch_queue_ready", "gauge", "Downloads ready to start.", [("", "\(gauges.ready)")])
        metric("dropfetch_queue_waiting", "gauge", "Downloads waiting for a retry, free space or a name's owner.",
               [("", "\(gauges.waiting)")])
        metric("dropfetch_inbox_jobs", "gauge", "Jobs in the inbox not yet claimed.", [("", "\(gauges.inbox)")])
        metric("dropfetch_held_jobs", "gauge", "Jobs in hold/.", [("", "\(held)")])
        metric("dropfetch_loop_stall_seconds", "gauge",
               "The longest turn of the event loop (its work between two waits) over the last minute.",
               [("", "\(stall)")])
        if let rateLimit = gauges.rateLimit, let concurrency = gauges.concurrency, let paused = gauges.paused {
            metric("dropfetch_rate_limit_bytes_per_second", "gauge", "limits.rate_limit in force (schedule: windows); 0: none.",
                   [("", "\(rateLimit)")])
            metric("dropfetch_concurrency_limit", "gauge", "concurrency.total in force (schedule: windows).",
                   [("", "\(concurrency)")])
            metric("dropfetch_schedule_paused", "gauge", "1 while a schedule: window pauses transfers, else 0.",
                   [("", paused ? "1" : "0")])
        }
        if !gauges.quotas.isEmpty {
            let labels = gauges.quotas.map {
                ",period=\"\($0.period)\",class=\"\(MetricsFile.labelValue($0.className))\""
            }
            metric("dropfetch_quota_used_bytes", "gauge", "Bytes the quota's current period used, by every agent of the spool.",
                   zip(labels, gauges.quotas).map { ($0, "\($1.used)") })
            metric("dropfetch_quota_limit_bytes", "gauge", "The quota's bytes per period.",
                   zip(labels, gauges.quotas).map { ($0, "\($1.bytes)") })
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A label value with `\`, `"` and line feeds escaped (Prometheus text format 0.0.4).
    static func labelValue(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.append(character)
            }
        }
        return result
    }
}

/// The longest turn of the agent's event loop — from its wake-up to its next wait — over the last
/// minute: the longest turn of each of the last 60 seconds, kept by second.
struct LoopStall {
    private var began: Int64?
    private var longestTurn = [Int64](repeating: 0, count: 60)
    private var second = [Int64](repeating: .min, count: 60)

    /// The loop woke up.
    mutating func begin(at now: Int64 = MonotonicClock.nanoseconds()) {
        began = now
    }

    /// The loop is about to wait: the turn since `begin` is counted.
    mutating func end(at now: Int64 = MonotonicClock.nanoseconds()) {
        guard let began else { return }
        self.began = nil
        let current = now / 1_000_000_000
        let slot = Int(current % 60)
        if second[slot] != current {
            second[slot] = current
            longestTurn[slot] = 0
        }
        longestTurn[slot] = max(longestTurn[slot], now - began)
    }

    /// Seconds, the longest turn that ended within the minute before `now`.
    func longest(at now: Int64) -> Double {
        let current = now / 1_000_000_000
        var longest: Int64 = 0
        for slot in 0..<60 where second[slot] > current - 60 { longest = max(longest, longestTurn[slot]) }
        return Double(longest) / 1e9
    }
}
