import DropFetch
import Foundation

/// A throw-away spool with a config file, and the real `dropfetch` binary run against it.
///
/// The configs, logs and the agents' working folder are always in a local temp folder (`root`).
/// The spool and destination are there too, unless the fixture is made `on` mount points: then
/// they are in a fresh folder of the same name under each mount point, which must all be mounts of
/// one shared volume (the Distributed suite: two FUSE mounts of one GlusterFS volume stand in for
/// two hosts). The fixture itself reads and writes through the first; `view: n` names the n-th.
final class SpoolFixture: @unchecked Sendable {
    let root: URL
    /// The folder holding `spool/` and `downloads/` as each mount sees it (one entry when local).
    let views: [String]
    var spool: String { spool(view: 0) }
    var destination: String { destination(view: 0) }
    var configPath: String { root.path + "/config.yaml" }
    private var daemon: Process?
    let logPath: String

    /// `extraConfig` is appended to a config naming this fixture's spool and destination.
    /// `mounts` places the spool and destination on a shared volume (see the type's comment).
    init(extraConfig: String = "", on mounts: [String] = []) throws {
        let unique = "dropfetch-test-\(UUID().uuidString)"
        root = FileManager.default.temporaryDirectory.appendingPathComponent(unique)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        views = mounts.isEmpty ? [root.path] : mounts.map { $0 + "/" + unique }
        if !mounts.isEmpty { try FileManager.default.createDirectory(atPath: views[0], withIntermediateDirectories: false) }
        logPath = root.path + "/agent.log"
        try writeConfig(extraConfig)
        for folder in ["inbox", "done", "failed"] {
            try FileManager.default.createDirectory(atPath: spool + "/" + folder, withIntermediateDirectories: true)
        }
    }

    deinit {
        if let daemon, daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: root)
        if views[0] != root.path { try? FileManager.default.removeItem(atPath: views[0]) }
    }

    /// The spool as mount `view` sees it.
    func spool(view: Int) -> String { views[view] + "/spool" }

    /// The destination as mount `view` sees it.
    func destination(view: Int) -> String { views[view] + "/downloads" }

    /// `path` as the fixture's own view (the first) names it: an agent on another mount writes
    /// its own view's paths into status files.
    func canonical(_ path: String) -> String {
        for view in views.dropFirst() where path == view || path.hasPrefix(view + "/") {
            return views[0] + path.dropFirst(view.count)
        }
        return path
    }

    func writeConfig(_ extra: String) throws {
        let text = """
            spool: \(spool)
            destination: \(destination)
            agent_id: test-agent
            log_level: debug
            retry: { attempts: 3, initial_delay: 100ms, max_delay: 1s }
            scan_interval: 30s

            """ + Self.fsyncOverride(extra) + extra
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// `DROPFETCH_TEST_FSYNC=false` runs every agent of the suite with `fsync: false` (claims and
    /// finishes then run on the loop, not on workers) unless the test sets `fsync` itself.
    static func fsyncOverride(_ extra: String) -> String {
        guard let value = ProcessInfo.processInfo.environment["DROPFETCH_TEST_FSYNC"], !extra.contains("fsync:") else { return "" }
        return "fsync: \(value)\n"
    }

    /// Drops a job the safe way (dot temp, then rename), its mtime ten seconds back.
    @discardableResult
    func drop(_ name: String, _ content: String, folder: String = "") throws -> String {
        let directory = spool + "/inbox" + (folder.isEmpty ? "" : "/" + folder)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let temp = directory + "/." + name + ".tmp"
        try content.write(toFile: temp, atomically: false, encoding: .utf8)
        // Written a while ago, as most spool files are when an agent starts: a scan claims a file
        // only once it has settled (mtime 2 s old). Relative order of drops is kept.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -10)], ofItemAtPath: temp)
        try FileManager.default.moveItem(atPath: temp, toPath: directory + "/" + name)
        return directory + "/" + name
    }

    /// The binary under test: `DROPFETCH_BIN` when set (an installed one), else the `dropfetch` built
    /// beside this test bundle, so that a run from another scratch path (`--scratch-path
    /// .build-tsan`, `--sanitize=thread`) starts that build's agent, not `.build`'s.
    static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["DROPFETCH_BIN"] { return path }
        if let bundle = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let beside = URL(fileURLWithPath: bundle).deletingLastPathComponent().path + "/dropfetch"
            if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return root.path + "/.build/debug/dropfetch"
    }()

    /// Runs `dropfetch ARGS --config CONFIG` to completion and returns its exit code.
    @discardableResult
    func runCLI(_ arguments: [String], config: String? = nil, timeout: TimeInterval = 120) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: SpoolFixture.binary)
        process.arguments = arguments + ["--config", config ?? configPath]
        let log = try logHandle()
        process.standardError = log
        process.standardOutput = log
        try process.runSerially()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw FixtureError.timedOut(arguments)
        }
        return process.terminationStatus
    }

    func runOnce(timeout: TimeInterval = 120) throws -> Int32 {
        try runCLI(["run", "--once"], timeout: timeout)
    }

    /// Starts `dropfetch run` as a daemon; `stopDaemon` or `killDaemon` ends it.
    func startDaemon() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: SpoolFixture.binary)
        process.arguments = ["run", "--config", configPath]
        let log = try logHandle()
        process.standardError = log
        process.standardOutput = log
        try process.runSerially()
        daemon = process
    }

    var daemonIsRunning: Bool { daemon?.isRunning ?? false }
    var daemonPID: Int32? { daemon?.processIdentifier }

    /// SIGTERM, then waits for the exit; returns the exit code.
    @discardableResult
    func stopDaemon(timeout: TimeInterval = 10) throws -> Int32 {
        guard let daemon else { return -1 }
        kill(daemon.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while daemon.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if daemon.isRunning {
            kill(daemon.processIdentifier, SIGKILL)
            throw FixtureError.timedOut(["stop"])
        }
        self.daemon = nil
        return daemon.terminationStatus
    }

    func killDaemon() {
        guard let daemon else { return }
        kill(daemon.processIdentifier, SIGKILL)
        daemon.waitUntilExit()
        self.daemon = nil
    }

    private func logHandle() throws -> FileHandle {
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        handle.seekToEndOfFile()
        return handle
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    // MARK: What a user would look at

    func names(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: spool + "/" + folder)) ?? []).sorted()
    }

    func jobs(in folder: String) -> [String] {
        names(in: folder).filter { $0.hasSuffix(".url") && !$0.hasPrefix(".") }
    }

    func status(_ folder: String, _ jobName: String) throws -> StatusRecord {
        let data = try Data(contentsOf: URL(fileURLWithPath: statusPath(folder, jobName)))
        guard let record = StatusRecord.decode(Array(data)) else { throw FixtureError.badStatus(jobName) }
        return record
    }

    /// The raw status JSON as an object, to check the exact field names of the contract.
    func statusJSON(_ folder: String, _ jobName: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: statusPath(folder, jobName)))
        return try (JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    func statusPath(_ folder: String, _ jobName: String) -> String {
        spool + "/" + folder + "/" + String(jobName.dropLast(4)) + ".status.json"
    }

    func downloaded(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: destination + "/" + name).map(Array.init)
    }

    /// Every name in the destination, hidden ones included.
    func destinationNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: destination)) ?? []).sorted()
    }

    func fileSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }
}

enum FixtureError: Error {
    case timedOut([String])
    case badStatus(String)
}
