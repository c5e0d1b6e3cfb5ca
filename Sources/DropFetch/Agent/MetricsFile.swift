import Glibc

/// The `metrics_file`: Prometheus text exposition format (version 0.0.4) for node-exporter's
/// textfile collector, replaced atomically so the collector never reads half a file.
struct MetricsFile {
    let path: String
    let agent: String
    var jobsFiled: [String: Int] = [:]
    var bytesDownloaded: Int64 = 0
    var retries = 0
    /// Bytes received by the transfers of each class, finished or not (TransferMeter).
    var bytesByClass: [String: Int64] = [:]
    /// The agent's loop marks each turn's start and end here.
    var loopStall = LoopStall()

    init(path: String, agent: String) {
        self.path = path
        self.agent = agent
    }

    func text(active: Int, ready: Int, waiting: Int) -> String {
        let label = "agent=\"\(MetricsFile.labelValue(agent))\""
        var lines = [
            "# HELP dropfetch_jobs_total Jobs filed in done/ or failed/ since the agent started.",
            "# TYPE dropfetch_jobs_total counter",
        ]
        for state in ["done", "failed", "cancelled"] {
            lines.append("dropfetch_jobs_total{\(label),state=\"\(state)\"} \(jobsFiled[state, default: 0])")
        }
        lines += [
            "# HELP dropfetch_downloaded_bytes_total Bytes of finished downloads since the agent started.",
            "# TYPE dropfetch_downloaded_bytes_total counter",
            "dropfetch_downloaded_bytes_total{\(label)} \(bytesDownloaded)",
            "# HELP dropfetch_received_bytes_total Bytes received by class since the agent started, unfinished downloads included.",
            "# TYPE dropfetch_received_bytes_total counter",
        ]
        for (name, bytes) in bytesByClass.sorted(by: { $0.key < $1.key }) {
            lines.append("dropfetch_received_bytes_total{\(label),class=\"\(MetricsFile.labelValue(name))\"} \(bytes)")
        }
        lines += [
            "# HELP dropfetch_retries_total Attempts that failed and were scheduled again.",
            "# TYPE dropfetch_retries_total counter",
            "dropfetch_retries_total{\(label)} \(retries)",
            "# HELP dropfetch_transfers_active Downloads running now.",
            "# TYPE dropfetch_transfers_active gauge",
            "dropfetch_transfers_active{\(label)} \(active)",
            "# HELP dropfetch_queue_ready Downloads ready to start.",
            "# TYPE dropfetch_queue_ready gauge",
            "dropfetch_queue_ready{\(label)} \(ready)",
            "# HELP dropfetch_queue_waiting Downloads waiting for a retry.",
            "# TYPE dropfetch_queue_waiting gauge",
            "dropfetch_queue_waiting{\(label)} \(waiting)",
            "# HELP dropfetch_loop_stall_seconds The longest turn of the event loop (its work between two waits) over the last minute.",
            "# TYPE dropfetch_loop_stall_seconds gauge",
            "dropfetch_loop_stall_seconds{\(label)} \(loopStall.longest(at: LoopStall.now()))",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// A label value with `\`, `"` and line feeds escaped (Prometheus text format 0.0.4).
    static func labelValue(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    func write(active: Int, ready: Int, waiting: Int) throws(SystemError) {
        try AtomicFile.write(Array(text(active: active, ready: ready, waiting: waiting).utf8), to: path, durable: false)
    }
}

/// The longest turn of the agent's event loop — from its wake-up to its next wait — over the last
/// minute: the longest turn of each of the last 60 seconds, kept by second.
struct LoopStall {
    private var began: Int64?
    private var longestTurn = [Int64](repeating: 0, count: 60)
    private var second = [Int64](repeating: .min, count: 60)

    /// CLOCK_MONOTONIC in nanoseconds.
    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// The loop woke up.
    mutating func begin(at now: Int64 = LoopStall.now()) {
        began = now
    }

    /// The loop is about to wait: the turn since `begin` is counted.
    mutating func end(at now: Int64 = LoopStall.now()) {
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
