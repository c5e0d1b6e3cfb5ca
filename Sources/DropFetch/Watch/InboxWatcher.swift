import CLinux
import Glibc

/// Watches the inbox tree with inotify(7): `IN_CLOSE_WRITE` and `IN_MOVED_TO` announce jobs, new
/// subfolders get their own watch, and `IN_Q_OVERFLOW` asks for a full rescan.
///
/// A routing folder is watched by inode (IN_DONT_FOLLOW | IN_ONLYDIR: never a symlink's target),
/// and an event from it counts only while that inode is still the folder under its name
/// (lstat(2): same st_dev and st_ino): a folder moved out of the inbox and replaced by a symlink
/// keeps its watch, and what is created in it is not a name in the inbox. Its watch is dropped.
final class InboxWatcher {
    struct Changes {
        /// Job files (relative to the inbox) that may have arrived.
        var arrived: [String] = []
        /// Released states (`.x.state.json`) that arrived: `release` puts one before its job.
        var releasedStates: [String] = []
        /// Events were lost or a folder appeared: the caller should rescan the inbox.
        var needsRescan = false
    }

    private let inotify: InotifyDescriptor
    private let inbox: String
    /// A watched folder: relative to the inbox ("" for the inbox itself), and its inode.
    private struct Folder {
        var relative: String
        var device: UInt64
        var inode: UInt64
    }

    /// Watch descriptor → the folder it was added for.
    private var folders: [Int32: Folder] = [:]

    var fileDescriptor: Int32 { inotify.fileDescriptor }

    init(inbox: String) throws(SystemError) {
        self.inbox = inbox
        inotify = try InotifyDescriptor("inbox")
        try watchTree("")
    }

    /// Adds a watch on a folder and every folder below it.
    private func watchTree(_ relative: String, depth: Int = 0) throws(SystemError) {
        let path = relative.isEmpty ? inbox : FileSystem.join(inbox, relative)
        let wd: Int32
        do {
            wd = try inotify.watch(path, mask: Int32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)
                                   | Int32(bitPattern: UInt32(IN_DONT_FOLLOW | IN_ONLYDIR)))
        } catch {
            if relative.isEmpty { throw error }
            return
        }
        guard let info = try? FileSystem.lstatus(path) else { return }
        folders[wd] = Folder(relative: relative, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        guard depth < Spool.InboxScan.maxDepth, let entries = try? FileSystem.entries(of: path) else { return }
        for entry in entries where !entry.name.hasPrefix(".") {
            let child = relative.isEmpty ? entry.name : FileSystem.join(relative, entry.name)
            if entry.isDirectory ?? FileSystem.isDirectory(FileSystem.join(path, entry.name)) {
                try watchTree(child, depth: depth + 1)
            }
        }
    }

    /// Whether the watched folder is still the one under its name in the inbox.
    private func isStillInInbox(_ folder: Folder) -> Bool {
        guard let info = try? FileSystem.lstatus(FileSystem.join(inbox, folder.relative)) else { return false }
        return UInt64(info.st_dev) == folder.device && UInt64(info.st_ino) == folder.inode
            && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Reads every pending event without blocking.
    func drain() -> Changes {
        var changes = Changes()
        for event in inotify.drain() {
            if event.has(Int32(IN_Q_OVERFLOW)) {
                changes.needsRescan = true
                continue
            }
            guard let watched = folders[event.watch] else { continue }
            if event.has(Int32(IN_IGNORED)) {
                folders[event.watch] = nil
                continue
            }
            let folder = watched.relative
            if !folder.isEmpty, !isStillInInbox(watched) {
                folders[event.watch] = nil
                inotify.unwatch(event.watch)
                changes.needsRescan = true
                continue
            }
            guard !event.name.isEmpty else { continue }
            let relative = folder.isEmpty ? event.name : FileSystem.join(folder, event.name)
            if event.name.hasPrefix(".") {
                if event.has(Int32(IN_CLOSE_WRITE | IN_MOVED_TO)), Spool.isReleasedStateName(event.name) {
                    changes.releasedStates.append(relative)
                }
                continue
            }
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
