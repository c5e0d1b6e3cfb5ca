import Glibc

/// Read-only and small write operations on a spool for the CLI (`check`, `add`).
public enum SpoolInspection {
    /// Problems that would stop an agent from using the spool; empty when it is fine.
    public static func problems(config: Config) -> [String] {
        let root = Agent.absolute(config.spool)
        var found: [String] = []
        let destination = Agent.absolute(config.destination ?? root + "/downloads")
        for path in [root, destination] {
            var probe = path
            while !FileSystem.exists(probe), probe != "/", !probe.isEmpty {
                probe = FileSystem.directoryName(of: probe)
            }
            if !FileSystem.isDirectory(probe) {
                found.append("\(probe): not a folder")
            } else if access(probe, W_OK | X_OK) != 0 {
                found.append("\(probe): not writable")
            }
        }
        return found
    }

    /// Writes a job file into the inbox atomically (dot temp file, then rename(2)); returns its path.
    public static func addJob(urls: [String], priority: Int?, className: String?, out: String?,
                              config: Config) throws -> String {
        let fields = urls + [className, out].compactMap { $0 }
        if let bad = fields.first(where: { $0.contains { $0.isNewline || $0 == "\t" } }) {
            throw JobFileError(line: nil, message: "line breaks and tabs are not allowed in arguments: \(Redaction.url(bad).debugDescription)")
        }
        let inbox = Agent.absolute(config.spool) + "/inbox"
        try FileSystem.makeDirectories(inbox)
        var text = ""
        if let priority { text += "priority=\(priority)\n" }
        if let className { text += "class=\(className)\n" }
        text += urls.joined(separator: "\t") + "\n"
        if let out { text += "  out=\(out)\n" }
        _ = try JobFileParser.parse(Array(text.utf8))
        let base = out.map { String($0.prefix(64)) } ?? FileName.fromURL(urls[0])
        let allowed: Set<Character> = ["-", "_", "."]
        let stem = String(base.filter { character in character.isLetter || character.isNumber || allowed.contains(character) })
        let name = "\(stem.isEmpty ? "job" : stem)-\(Int64(time(nil)))-\(getpid()).url"
        let temp = inbox + "/." + name + ".tmp"
        let file = try FileDescriptor.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644)
        try file.write(Array(text.utf8))
        try file.sync()
        for candidate in Spool.candidateNames(name) {
            let target = inbox + "/" + candidate
            if try publish(temp, as: target) { return target }
        }
        throw SystemError(code: EEXIST, operation: "rename", path: temp)
    }

    /// Renames without replacing; false when the name is taken.
    private static func publish(_ temp: String, as target: String) throws(SystemError) -> Bool {
        do {
            try FileSystem.renameNoReplace(temp, to: target)
            return true
        } catch {
            if error.code == EEXIST { return false }
            throw error
        }
    }

    /// Blocks SIGTERM, SIGINT and SIGHUP so the agent's signalfd receives them; call first in main.
    public static func prepareProcessSignals() {
        SignalSource.blockHandledSignals()
        signal(SIGPIPE, SIG_IGN)
    }
}
