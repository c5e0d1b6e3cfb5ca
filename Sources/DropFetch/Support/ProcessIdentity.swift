import CLinux
import Glibc

/// A process as another process of the same host can tell it apart: its pid namespace
/// (/proc/self/ns/pid) and its start time (/proc/<pid>/stat field 22), so that a reused pid is
/// not taken for the process that had it (proc(5)).
enum ProcessIdentity {
    /// This process's pid namespace, e.g. `pid:[4026531836]`; nil where /proc does not say.
    static func pidNamespace() -> String? {
        var buffer = [CChar](repeating: 0, count: 128)
        let length = readlink("/proc/self/ns/pid", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Process `pid`'s start time in clock ticks since boot; nil when there is no such process.
    static func startTime(of pid: Int32) -> UInt64? {
        guard let file = try? FileDescriptor.open("/proc/\(pid)/stat", flags: O_RDONLY),
              let bytes = try? file.readAll(limit: 4096) else { return nil }
        // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        // Fields from 3 on: field 22 is the 20th after the parenthesis.
        guard fields.count > 19 else { return nil }
        return UInt64(String(decoding: fields[19], as: UTF8.self))
    }

    /// Whether process `pid`, started at `started`, is gone from this pid namespace (kill(2) with
    /// signal 0 says ESRCH, or the pid now belongs to a process started at another time).
    static func isGone(pid: Int32, started: UInt64) -> Bool {
        guard pid > 0 else { return false }
        if kill(pid, 0) != 0, dfl_errno() == ESRCH { return true }
        guard let now = startTime(of: pid) else { return false }
        return now != started
    }
}
