import Glibc

/// Whether a descriptor is systemd's journal stream: systemd.exec(5) sets `$JOURNAL_STREAM` to the
/// `device:inode` of the stream it connects to stdout/stderr, so a process compares it with
/// fstat(2) and knows its lines reach the journal (and may carry sd-daemon(3) `<N>` prefixes)
/// rather than a terminal or a file the variable was inherited past.
public enum JournalStream {
    /// True when `value` (the variable, nil when unset) names the file open on `descriptor`.
    public static func matches(_ value: String?, descriptor: Int32) -> Bool {
        guard let value, let colon = value.firstIndex(of: ":"),
              let device = UInt64(value[..<colon]), let inode = UInt64(value[value.index(after: colon)...])
        else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// True when this process's stderr is the journal stream named by `$JOURNAL_STREAM`.
    public static func isStandardError() -> Bool {
        matches(getenv("JOURNAL_STREAM").map { String(cString: $0) }, descriptor: 2)
    }

    /// sd-daemon(3) priority prefixes, for lines that do not go through the logger.
    public enum Priority: Int, Sendable {
        case critical = 2, error = 3, warning = 4, notice = 5, info = 6, debug = 7

        public var prefix: String { "<\(rawValue)>" }
    }
}
