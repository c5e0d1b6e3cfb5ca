import Glibc

/// Read-only and small write operations on a spool for the CLI (`check`, `add`, the control commands).
public enum SpoolInspection {
    /// A control command's spool is not there: it fails (exit 3) rather than create one.
    public struct MissingSpool: Error, Sendable, CustomStringConvertible {
        public var root: String
        public var description: String {
            "no spool at \(root): start the agent once (`dropfetch run`) or point --config at the right file"
        }
    }

    /// `add`'s spool cannot be made: its parent folder is missing, or a folder cannot be created.
    public struct UncreatableSpool: Error, Sendable, CustomStringConvertible {
        public var root: String
        public var reason: String
        public var description: String { "no spool at \(root), and it cannot be created: \(reason)" }
    }

    /// Makes the spool's folders as `run` does (same modes) when its parent exists, so `add` works before any agent ran.
    public static func prepareSpool(config: Config) throws(UncreatableSpool) {
        let root = Agent.absolute(config.spool)
        let parent = FileSystem.directoryName(of: root)
        if !FileSystem.isDirectory(root) {
            var info = stat()
            guard stat(parent, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw UncreatableSpool(root: root, reason: "its parent folder \(parent) does not exist")
            }
        }
        do {
            for folder in Spool.folderNames { try FileSystem.makeDirectories(FileSystem.join(root, folder), trusting: root) }
        } catch {
            throw UncreatableSpool(root: root, reason: "\(error)")
        }
    }

    /// Throws `MissingSpool` unless the spool's folder exists; looks, creates nothing.
    public static func requireSpool(config: Config) throws(MissingSpool) {
        let root = Agent.absolute(config.spool)
        var info = stat()
        guard stat(root, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { throw MissingSpool(root: root) }
    }

    /// What would stop `run` with this config, each naming its path; empty when all is well.
    /// Creates nothing: a spool or destination that is missing but can be created is fine.
    public static func problems(config: Config, searchPath: String? = currentSearchPath()) -> [String] {
        let root = Agent.absolute(config.spool)
        var folders = [("spool", root), ("destination", Agent.absolute(config.destination ?? root + "/downloads"))]
        for jobClass in config.classes {
            if let destination = jobClass.destination {
                folders.append(("class \(jobClass.name) destination", Agent.absolute(destination)))
            }
        }
        var found = folders.compactMap { what, path in
            PathProbe.creatableFolder(path).map { "\(what) \(path): \($0)" }
        }
        if let metrics = config.metricsFile.map(Agent.absolute) {
            if FileSystem.isDirectory(metrics) {
                found.append("metrics_file \(metrics) is a folder")
            } else if let problem = PathProbe.writableFolder(FileSystem.directoryName(of: metrics)) {
                found.append("metrics_file \(metrics): \(problem)")
            }
        }
        if let page = config.statusPage.map(Agent.absolute) {
            if FileSystem.isDirectory(page) {
                found.append("status_page \(page) is a folder")
            } else if let problem = PathProbe.writableFolder(FileSystem.directoryName(of: page)) {
                found.append("status_page \(page): \(problem)")
            }
        }
        let hooks = [("on_done", config.hooks.onDone), ("on_failed", config.hooks.onFailed), ("on_idle", config.hooks.onIdle)]
        for (name, argv) in hooks {
            guard let program = argv?.first else { continue }
            if let problem = PathProbe.executable(program, searchPath: searchPath) {
                found.append("hooks.\(name) \(program): \(problem)")
            }
        }
        return found
    }

    /// `$PATH`, as posix_spawnp(3) will search it for the hooks.
    public static func currentSearchPath() -> String? {
        getenv("PATH").map { String(cString: $0) }
    }

    /// Blocks SIGTERM, SIGINT and SIGHUP so the agent's signalfd receives them; call first in main.
    public static func prepareProcessSignals() {
        SignalSource.blockHandledSignals()
        signal(SIGPIPE, SIG_IGN)
    }
}
