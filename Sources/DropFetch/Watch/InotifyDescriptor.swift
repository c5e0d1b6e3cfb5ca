import CLinux
import Glibc

/// An inotify(7) instance: add watches, then read the queued events without blocking.
final class InotifyDescriptor {
    struct Event {
        var watch: Int32
        var mask: UInt32
        /// The file name within the watched folder; empty for events about the folder itself.
        var name: String

        func has(_ flags: Int32) -> Bool { mask & UInt32(flags) != 0 }
    }

    private let descriptor: FileDescriptor
    /// The size of an event with a name of NAME_MAX bytes (its terminating zero included).
    private static let longestEvent = MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    var fileDescriptor: Int32 { descriptor.rawValue }

    init(_ purpose: String) throws(SystemError) {
        let fd = try retryingEINTR("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
        descriptor = FileDescriptor(rawValue: fd, path: "inotify (\(purpose))")
    }

    /// inotify_add_watch(2); returns the watch descriptor.
    func watch(_ path: String, mask: Int32) throws(SystemError) -> Int32 {
        try retryingEINTR("inotify_add_watch", path) { inotify_add_watch(descriptor.rawValue, path, UInt32(mask)) }
    }

    /// inotify_rm_watch(2); a watch the kernel already dropped is no error.
    func unwatch(_ watch: Int32) {
        _ = inotify_rm_watch(descriptor.rawValue, watch)
    }

    /// Every event queued now: read(2) until a read leaves room for one more event of the
    /// longest name, which means the queue was empty (inotify hands out whole events only), so
    /// that a wake-up for a few events costs one read, not a second one answered EAGAIN.
    func drain() -> [Event] {
        var events: [Event] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.rawValue, $0.baseAddress, $0.count) }
            if count <= 0 {
                if count < 0, dfl_errno() == EINTR { continue }
                return events
            }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                let headerSize = MemoryLayout<inotify_event>.size
                while offset + headerSize <= count {
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let start = offset + headerSize
                    // The name is NUL-padded; decoded from the buffer in place (a generic slice decodes byte by byte).
                    let padded = UnsafeRawBufferPointer(rebasing: raw[start..<min(count, start + Int(event.len))])
                    let length = padded.firstIndex(of: 0) ?? padded.count
                    let name = padded.baseAddress.map {
                        String(decoding: UnsafeBufferPointer(start: $0.assumingMemoryBound(to: UInt8.self), count: length), as: UTF8.self)
                    } ?? ""
                    offset = start + Int(event.len)
                    events.append(Event(watch: event.wd, mask: event.mask, name: name))
                }
            }
            if count <= buffer.count - InotifyDescriptor.longestEvent { return events }
        }
    }
}
