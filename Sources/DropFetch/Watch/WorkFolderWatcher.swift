import CLinux
import Glibc

/// Watches the agent's own `work/<agent>/` with inotify(7) for job files moved out (`mv` to hold/,
/// `dropfetch hold|cancel`) or deleted by hand, so their transfers stop at once.
final class WorkFolderWatcher {
    private let descriptor: FileDescriptor
    private var buffer = [UInt8](repeating: 0, count: 16 * 1024)

    var fileDescriptor: Int32 { descriptor.rawValue }

    init(folder: String) throws(SystemError) {
        let fd = try retryingEINTR("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
        descriptor = FileDescriptor(rawValue: fd, path: "inotify (work)")
        _ = try retryingEINTR("inotify_add_watch", folder) {
            inotify_add_watch(fd, folder, UInt32(IN_MOVED_FROM | IN_DELETE))
        }
    }

    /// Names of job files that left the folder since the last call.
    func drainDeparted() -> [String] {
        var names: [String] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.rawValue, $0.baseAddress, $0.count) }
            if count <= 0 {
                if count < 0, dfl_errno() == EINTR { continue }
                return names
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
                    if Spool.isJobName(name) { names.append(name) }
                }
            }
        }
    }
}
