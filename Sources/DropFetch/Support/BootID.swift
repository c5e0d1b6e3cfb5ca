import Glibc

/// This boot's identity, from /proc/sys/kernel/random/boot_id: data a process wrote before it
/// died on this boot is still in the page cache, while after a reboot only what was fsynced is.
enum BootID {
    /// The boot id, or nil where /proc does not tell (then nothing unsynced is ever trusted).
    static let current: String? = read()

    private static func read() -> String? {
        guard let file = try? FileDescriptor.open("/proc/sys/kernel/random/boot_id", flags: O_RDONLY),
              let bytes = try? file.readAll(limit: 64) else { return nil }
        let text = String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        return text.isEmpty ? nil : text
    }
}
