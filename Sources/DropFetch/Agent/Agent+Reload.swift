import Glibc

/// The config as the running agent takes it: destinations checked at start (access(2)), and a
/// reload on SIGHUP or a change of the file, which applies to what has not started yet.
extension Agent {
    /// Every destination that exists must take new files (access(2) W_OK|X_OK), and none may be
    /// reached through a symlink another user could replace (FileSystem.isAdminsRoot): one that
    /// fails is reported at start (exit 3), not as an `internal` failure of each job that reaches it.
    func checkDestinationsWritable() throws(SystemError) {
        let classes = config.classes.compactMap { $0.destination.map(Agent.absolute) }
        for path in classes where !FileSystem.isAdminsRoot(path) {
            throw SystemError(code: ENOTDIR, operation: "the destination is not a folder reached only through symlinks root or this user made (a file in the way, or a link in a folder others can write)",
                              path: path)
        }
        for path in [context.destinationRoot] + classes where FileSystem.exists(path) {
            if access(path, W_OK | X_OK) != 0 {
                throw SystemError(code: errno, operation: "the destination cannot take new files (access W_OK)",
                                  path: path)
            }
        }
    }

    /// Applies a new config to what has not started yet; a bad file keeps the running config.
    /// Spool, destination and agent id need a restart; running transfers keep going.
    func reloadConfig() {
        guard let path = options.configPath else { return }
        notifier?.reloading()
        defer { notifier?.ready() }
        do {
            var fresh = try ConfigLoader.load(path: path)
            for (name, changed) in [("spool", fresh.spool != config.spool),
                                    ("destination", fresh.destination != config.destination),
                                    ("agent_id", fresh.agentID != config.agentID),
                                    ("fsync", fresh.fsync != config.fsync)] where changed {
                logger.warning("config reload: \(name) changes only on restart")
            }
            fresh.spool = config.spool
            fresh.agentID = config.agentID
            fresh.destination = config.destination
            // The spool and the group commit were made for the fsync setting of the start.
            fresh.fsync = config.fsync
            guard fresh != config else {
                logger.info("config unchanged", metadata: ["path": "\(path)"])
                return
            }
            context.replaceConfig(fresh)
            do {
                try checkDestinationsWritable()
            } catch {
                // Not refused: the other classes run; this one's jobs fail naming the folder.
                logger.error("config reload: \(error); jobs that go there will fail")
            }
            names.closeRoots()
            runner.requeueUnstarted()
            bandwidth.applyRateLimits()
            logger.info("config reloaded from \(path)", metadata: [
                "total": "\(fresh.concurrency.total)", "per_host": "\(fresh.concurrency.perHost)",
                "classes": "\(fresh.classes.count)",
            ])
            rejectedConfig = nil
        } catch {
            // One edit can come as several events (a write and a rename, or the watch and a SIGHUP):
            // the same file refused again is not reported again.
            let seen = Agent.fileIdentity(path)
            if seen == nil || seen != rejectedConfig {
                logger.error("config not reloaded, keeping the running one: \(error)")
            }
            rejectedConfig = seen
        }
    }

    /// A file's inode, size and modification time (lstat(2)); nil when it cannot be looked at.
    static func fileIdentity(_ path: String) -> [Int64]? {
        guard let info = try? FileSystem.lstatus(path) else { return nil }
        return [Int64(bitPattern: UInt64(info.st_ino)), Int64(info.st_size), Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec)]
    }
}
