import CLinux
import Glibc

/// Watches the config file's folder with inotify(7): editors save by writing a temp file and
/// renaming it over the old one, so the file itself cannot be watched.
final class ConfigWatcher {
    private let descriptor: FileDescriptor
    private let fileName: String
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)

    var fileDescriptor: Int32 { descriptor.rawValue }

    init(configPath: String) throws(SystemError) {
        fileName = FileSystem.baseName(of: configPath)
        let fd = try retryingEINTR("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
        descriptor = FileDescriptor(rawValue: fd, path: "inotify (config)")
        let folder = FileSystem.directoryName(of: configPath)
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)
        _ = try retryingEINTR("inotify_add_watch", folder) { inotify_add_watch(fd, folder, mask) }
    }

    /// True when the config file was written or replaced since the last call.
    func drainChanged() -> Bool {
        var changed = false
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.rawValue, $0.baseAddress, $0.count) }
            if count <= 0 {
                if count < 0, dfl_errno() == EINTR { continue }
                return changed
            }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                let headerSize = MemoryLayout<inotify_event>.size
                while offset + headerSize <= count {
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let start = offset + headerSize
                    let name = String(decoding: raw[start..<min(count, start + Int(event.len))].prefix { $0 != 0 },
                                      as: UTF8.self)
                    offset = start + Int(event.len)
                    if name == fileName, event.mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0 { changed = true }
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { changed = true }
                }
            }
        }
    }
}
