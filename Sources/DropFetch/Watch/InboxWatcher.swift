import CLinux
import Glibc

/// Watches the inbox tree with inotify(7): `IN_CLOSE_WRITE` and `IN_MOVED_TO` announce jobs, new
/// subfolders get their own watch, and `IN_Q_OVERFLOW` asks for a full rescan.
final class InboxWatcher {
    struct Changes {
        /// Job files (relative to the inbox) that may have arrived.
        var arrived: [String] = []
        /// Events were lost or a folder appeared: the caller should rescan the inbox.
        var needsRescan = false
    }

    private let descriptor: FileDescriptor
    private let inbox: String
    /// Watch descriptor → folder relative to the inbox ("" for the inbox itself).
    private var folders: [Int32: String] = [:]
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    var fileDescriptor: Int32 { descriptor.rawValue }

    init(inbox: String) throws(SystemError) {
        self.inbox = inbox
        let fd = try retryingEINTR("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
        descriptor = FileDescriptor(rawValue: fd, path: "inotify")
        try watchTree("")
    }

    /// Adds a watch on a folder and every folder below it (inotify_add_watch(2)).
    private func watchTree(_ relative: String, depth: Int = 0) throws(SystemError) {
        let path = relative.isEmpty ? inbox : inbox + "/" + relative
        let wd = inotify_add_watch(descriptor.rawValue, path, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE))
        guard wd >= 0 else {
            if relative.isEmpty { throw SystemError.current("inotify_add_watch", path) }
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
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in
                Glibc.read(descriptor.rawValue, raw.baseAddress, raw.count)
            }
            if count <= 0 {
                if count < 0, dfl_errno() == EINTR { continue }
                break
            }
            buffer.withUnsafeBytes { raw in parse(raw, count: count, into: &changes) }
        }
        return changes
    }

    private func parse(_ raw: UnsafeRawBufferPointer, count: Int, into changes: inout Changes) {
        var offset = 0
        let headerSize = MemoryLayout<inotify_event>.size
        while offset + headerSize <= count {
            let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameStart = offset + headerSize
            let nameBytes = raw[nameStart..<min(count, nameStart + Int(event.len))].prefix { $0 != 0 }
            let name = String(decoding: nameBytes, as: UTF8.self)
            offset = nameStart + Int(event.len)

            if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                changes.needsRescan = true
                continue
            }
            guard let folder = folders[event.wd] else { continue }
            if event.mask & UInt32(IN_IGNORED) != 0 {
                folders[event.wd] = nil
                continue
            }
            guard !name.isEmpty, !name.hasPrefix(".") else { continue }
            let relative = folder.isEmpty ? name : folder + "/" + name
            if event.mask & UInt32(IN_ISDIR) != 0 {
                if event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    try? watchTree(relative)
                    changes.needsRescan = true
                }
            } else if event.mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0, Spool.isJobName(name) {
                changes.arrived.append(relative)
            }
        }
    }
}
