/// The status page and `status.json`, read from the spool and written on a worker: reading every
/// agent's state files, the inbox and done/ takes milliseconds, and replacing a file can wait for
/// the disk. Each file is written to a hidden temp name beside it and renamed over the old one,
/// so a web server or a script never reads half a file.
final class StatusPageWrite: WorkerTask {
    private let config: Config
    private let path: String
    private let jsonPath: String
    private let agent: String
    private let perMinute: [Int64]
    private let stopping: Bool
    private let cache: QueueOrder.JobFileCache
    private(set) var error: SystemError?

    init(config: Config, path: String, jsonPath: String, agent: String, perMinute: [Int64], stopping: Bool,
         cache: QueueOrder.JobFileCache) {
        self.config = config
        self.path = path
        self.jsonPath = jsonPath
        self.agent = agent
        self.perMinute = perMinute
        self.stopping = stopping
        self.cache = cache
    }

    /// `status.json` first, then the page, both from one reading of the spool.
    func perform() -> SystemError? {
        let page = StatusPage.read(config: config, throughput: StatusPage.Throughput(perMinute: perMinute, agent: agent),
                                   writer: "agent " + agent, stoppedAgent: stopping ? agent : nil, cache: cache)
        do {
            try AtomicFile.write(Array((page.status.json() + "\n").utf8), to: jsonPath, durable: false)
            try AtomicFile.write(Array(page.html().utf8), to: path, durable: false)
            error = nil
        } catch {
            self.error = error
        }
        return error
    }
}
