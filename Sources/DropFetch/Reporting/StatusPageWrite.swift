/// The status page and `status.json`, read from the spool and written on a worker: reading every
/// agent's state files, the inbox and done/ takes milliseconds, and replacing a file can wait for
/// the disk. Each file is written to a hidden temp name beside it, given mode 0644 whatever the
/// umask (a web server reads it), and renamed over the old one, so a web server or a script never
/// reads half a file; both go through the page folder's descriptor, never a symlink in its place.
final class StatusPageWrite: WorkerTask {
    let request: Request
    /// How the write ended, kept on the loop once the batch is back.
    private(set) var error: SystemError?

    init(config: Config, folder: DirectoryHandle, pageName: String, agent: String, perMinute: [Int64], stopping: Bool,
         cache: QueueOrder.JobFileCache, writtenAt: Int64) {
        request = Request(config: config, folder: folder, pageName: pageName, agent: agent, perMinute: perMinute,
                          stopping: stopping, cache: cache, writtenAt: writtenAt)
    }

    /// The mode of the page and `status.json` (docs/service.md: a web server reads them).
    static let mode: UInt32 = 0o644

    func received(_ answer: SystemError?) -> SystemError? {
        error = answer
        return answer
    }

    struct Request: WorkerRequest {
        let config: Config
        /// The page's folder, opened once by `StatusPageFile`.
        let folder: DirectoryHandle
        let pageName: String
        let agent: String
        let perMinute: [Int64]
        let stopping: Bool
        let cache: QueueOrder.JobFileCache
        /// The agent clock's wall time when the loop asked for the page (seconds since the epoch).
        let writtenAt: Int64

        /// `status.json` first, then the page, both from one reading of the spool.
        func perform() -> SystemError? {
            let page = StatusPage.read(config: config, throughput: StatusPage.Throughput(perMinute: perMinute, agent: agent),
                                       writer: "agent " + agent, stoppedAgent: stopping ? agent : nil, cache: cache,
                                       now: writtenAt)
            do {
                try AtomicFile.write(Array((page.status.json() + "\n").utf8), named: StatusPageFile.jsonName, in: folder,
                                     mode: StatusPageWrite.mode)
                try AtomicFile.write(Array(page.html().utf8), named: pageName, in: folder, mode: StatusPageWrite.mode)
                return nil
            } catch {
                return error
            }
        }
    }
}
