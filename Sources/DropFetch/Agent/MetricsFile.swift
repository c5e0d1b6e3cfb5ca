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
