import CLinux

/// Watches the inbox tree with inotify(7): `IN_CLOSE_WRITE` and `IN_MOVED_TO` announce jobs, new
/// subfolders get their own watch, and `IN_Q_OVERFLOW` asks for a full rescan.
final class InboxWatcher {
    struct Changes {
        /// Job files (relative to the inbox) that may have arrived.
        var arrived: [String] = []
        /// Events were lost or a folder appeared: the caller should rescan the inbox.
        var needsRescan = false
    }

    private let inotify: InotifyDescriptor
    private let inbox: String
    /// Watch descriptor → folder relative to the inbox ("" for the inbox itself).
    private var folders: [Int32: String] = [:]

    var fileDescriptor: Int32 { inotify.fileDescriptor }

    init(inbox: String) throws(SystemError) {
        self.inbox = inbox
        inotify = try InotifyDescriptor("inbox")
        try watchTree("")
    }

    /// Adds a watch on a folder and every folder below it.
    private func watchTree(_ relative: String, depth: Int = 0) throws(SystemError) {
        let path = relative.isEmpty ? inbox : inbox + "/" + relative
        let wd: Int32
        do {
            wd = try inotify.watch(path, mask: Int32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE))
        } catch {
            if relative.isEmpty { throw error }
            return
        }
        folders[wd] = relative
        guard depth < 16, let entries = try? FileSystem.entries(of: path) else { return }
        for entry in entries where !entry.name.hasPrefix(".") {
            let child = relative.isEmpty ? entry.name : relative + "/" + entry.name
            if entry.isDirectory ?? FileSystem.isDirectory(path + "/" + entry.name) {
                try watchTree(child, depth: depth + 1)
            }
        }
    }

    /// Reads every pending event without blocking.
    func drain() -> Changes {
        var changes = Changes()
        for event in inotify.drain() {
            if event.has(Int32(IN_Q_OVERFLOW)) {
                changes.needsRescan = true
                continue
            }
            guard let folder = folders[event.watch] else { continue }
            if event.has(Int32(IN_IGNORED)) {
                folders[event.watch] = nil
                continue
            }
            guard !event.name.isEmpty, !event.name.hasPrefix(".") else { continue }
            let relative = folder.isEmpty ? event.name : folder + "/" + event.name
            if event.has(Int32(IN_ISDIR)) {
                if event.has(Int32(IN_CREATE | IN_MOVED_TO)) {
                    try? watchTree(relative)
                    changes.needsRescan = true
                }
            } else if event.has(Int32(IN_CLOSE_WRITE | IN_MOVED_TO)), Spool.isJobName(event.name) {
                changes.arrived.append(relative)
            }
        }
        return changes
    }
}
