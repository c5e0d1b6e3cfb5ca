/// The status page and `status.json`, read from the spool and written on a worker: reading every
/// agent's state files, the inbox and done/ takes milliseconds, and replacing a file can wait for
/// the disk. Each file is written to a hidden temp name beside it and renamed over the old one,
/// so a web server or a script never reads half a file.
final class StatusPageWrite: WorkerTask {
    let request: Request
    /// How the write ended, kept on the loop once the batch is back.
    private(set) var error: SystemError?

    init(config: Config, path: String, jsonPath: String, agent: String, perMinute: [Int64], stopping: Bool,
         cache: QueueOrder.JobFileCache) {
        request = Request(config: config, path: path, jsonPath: jsonPath, agent: agent, perMinute: perMinute,
                          stopping: stopping, cache: cache)
    }

    func received(_ answer: SystemError?) -> SystemError? {
        error = answer
        return answer
    }

    struct Request: WorkerRequest {
        let config: Config
        let path: String
        let jsonPath: String
        let agent: String
        let perMinute: [Int64]
        let stopping: Bool
        let cache: QueueOrder.JobFileCache

        /// `status.json` first, then the page, both from one reading of the spool.
        func perform() -> SystemError? {
            let page = StatusPage.read(config: config, throughput: StatusPage.Throughput(perMinute: perMinute, agent: agent),
                                       writer: "agent " + agent, stoppedAgent: stopping ? agent : nil, cache: cache)
            do {
                try AtomicFile.write(Array((page.status.json() + "\n").utf8), to: jsonPath, durable: false)
                try AtomicFile.write(Array(page.html().utf8), to: path, durable: false)
                return nil
            } catch {
                return error
            }
        }
    }
}
