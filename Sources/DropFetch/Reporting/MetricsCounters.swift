import FoundationEssentials

/// The counters of the metrics file that outlive a run: kept in `<spool>/.metrics.<agent>.json`
/// (written atomically beside each metrics write) so that `run --once` after `run --once`
/// continues them rather than starting from zero, as a Prometheus counter must.
struct MetricsCounters: Codable, Equatable {
    /// Jobs filed, by state (`done`, `failed`, `cancelled`).
    var jobs: [String: Int64] = [:]
    /// Bytes received from servers by class, counted as they arrive.
    var receivedBytes: [String: Int64] = [:]
    var retries: Int64 = 0
    /// When a job was last filed as done (Unix seconds), if ever.
    var lastSuccess: Int64?
    /// Finished jobs removed under `history:`.
    var historyRemoved: Int64 = 0
    /// Times this agent was fenced (DESIGN.md §10).
    var fenced: Int64 = 0

    enum CodingKeys: String, CodingKey {
        case jobs, receivedBytes = "received_bytes", retries, lastSuccess = "last_success"
        case historyRemoved = "history_removed", fenced
    }

    init() {}

    /// Reads what is there; a key an older file lacks counts from zero.
    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        jobs = try container.decodeIfPresent([String: Int64].self, forKey: .jobs) ?? [:]
        receivedBytes = try container.decodeIfPresent([String: Int64].self, forKey: .receivedBytes) ?? [:]
        retries = try container.decodeIfPresent(Int64.self, forKey: .retries) ?? 0
        lastSuccess = try container.decodeIfPresent(Int64.self, forKey: .lastSuccess)
        historyRemoved = try container.decodeIfPresent(Int64.self, forKey: .historyRemoved) ?? 0
        fenced = try container.decodeIfPresent(Int64.self, forKey: .fenced) ?? 0
    }

    /// Both runs' counts together; the later last success.
    func adding(_ other: MetricsCounters) -> MetricsCounters {
        var sum = self
        sum.jobs.merge(other.jobs, uniquingKeysWith: +)
        sum.receivedBytes.merge(other.receivedBytes, uniquingKeysWith: +)
        sum.retries += other.retries
        sum.historyRemoved += other.historyRemoved
        sum.fenced += other.fenced
        sum.lastSuccess = [lastSuccess, other.lastSuccess].compactMap { $0 }.max()
        return sum
    }

    var totalReceived: Int64 { receivedBytes.values.reduce(0, +) }

    /// The JSON text, keys sorted.
    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return ((try? encoder.encode(self)).map(Array.init) ?? Array("{}".utf8)) + [0x0A]
    }

    /// Counters read back; nil for text that is not such an object (the file is then rewritten).
    static func decode(_ bytes: [UInt8]) -> MetricsCounters? {
        try? JSONDecoder().decode(MetricsCounters.self, from: Data(bytes))
    }
}
