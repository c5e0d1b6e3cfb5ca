import CLinux
import Glibc

/// An open file descriptor that is closed when the last reference goes (close(2) in deinit).
///
/// `Sendable`: its fields never change, so a worker thread can hold one (a sync of a batch, a
/// request) and the descriptor stays open for as long as any thread does.
final class FileDescriptor: Sendable {
    let rawValue: Int32
    let path: String

    init(rawValue: Int32, path: String) {
        self.rawValue = rawValue
        self.path = path
    }

    deinit { Glibc.close(rawValue) }

    /// openat(2) relative to the working directory; `mode` applies when the file is created.
    static func open(_ path: String, flags: Int32, mode: UInt32 = 0o644) throws(SystemError) -> FileDescriptor {
        let fd = try retryingEINTR("open", path) { path.withCString { dfl_openat(AT_FDCWD, $0, flags | O_CLOEXEC, mode) } }
        return FileDescriptor(rawValue: fd, path: path)
    }

    /// fchmod(2): `mode` whatever the umask made of the mode the file was created with.
    func setMode(_ mode: UInt32) throws(SystemError) {
        _ = try retryingEINTR("fchmod", path) { fchmod(rawValue, mode_t(mode)) }
    }

    /// Writes the whole buffer, looping over short writes (write(2)).
    func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) {
        var offset = 0
        while offset < buffer.count {
            let base = buffer.baseAddress! + offset
            let remaining = buffer.count - offset
            let written = try retryingEINTR("write", path) { Glibc.write(rawValue, base, remaining) }
            offset += written
        }
    }

    func write(_ bytes: [UInt8]) throws(SystemError) {
        let result: Result<Void, SystemError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(SystemError) in try write(buffer) }
        }
        try result.get()
    }

    /// Writes the whole of `bytes` at `offset` without moving the file position (pwrite(2)).
    func write(_ bytes: [UInt8], at offset: Int64) throws(SystemError) {
        let result: Result<Void, SystemError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(SystemError) in try write(buffer, at: offset) }
        }
        try result.get()
    }

    /// Writes the whole buffer at `offset` without moving the file position, looping over short writes (pwrite(2)).
    func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        var done = 0
        while done < buffer.count {
            let base = buffer.baseAddress! + done
            let remaining = buffer.count - done
            let position = off_t(offset) + off_t(done)
            done += try retryingEINTR("pwrite", path) { Glibc.pwrite(rawValue, base, remaining, position) }
        }
    }

    /// Starts writeback of the whole file without waiting (sync_file_range(2), SYNC_FILE_RANGE_WRITE),
    /// so that the fsyncs of a batch of files wait for their writes together, not one after another.
    /// Advice only: an error shows in the fsync that follows.
    func startWriteback() {
        _ = dfl_start_writeback(rawValue, 0, 0)
    }

    /// Flushes data and metadata to the device (fsync(2)).
    func sync() throws(SystemError) {
        _ = try retryingEINTR("fsync", path) { Glibc.fsync(rawValue) }
    }

    /// Flushes the data, and only the metadata needed to read it back (fdatasync(2)).
    func syncData() throws(SystemError) {
        _ = try retryingEINTR("fdatasync", path) { Glibc.fdatasync(rawValue) }
    }

    func truncate(to size: Int64) throws(SystemError) {
        _ = try retryingEINTR("ftruncate", path) { Glibc.ftruncate(rawValue, off_t(size)) }
    }

    @discardableResult
    func seek(to offset: Int64) throws(SystemError) -> Int64 {
        Int64(try retryingEINTR("lseek", path) { Glibc.lseek(rawValue, off_t(offset), SEEK_SET) })
    }

    func status() throws(SystemError) -> stat {
        var info = stat()
        _ = try retryingEINTR("fstat", path) { Glibc.fstat(rawValue, &info) }
        return info
    }

    /// Reads up to `limit` bytes from the current position (read(2) until EOF), for files of a
    /// few KiB at most; longer ones cost a few more reads and copies.
    func readAll(limit: Int) throws(SystemError) -> [UInt8] {
        try read(upTo: limit, expected: 4095)
    }

    /// Reads up to `limit` bytes from the current position (read(2) until EOF) into one buffer
    /// sized for `expected` bytes and one more (fstat(2)'s `st_size`), so that a file no longer
    /// than it said takes one allocation, nothing zero-filled; a longer one grows the buffer.
    /// With `sizeIsKnown` (`expected` is the file's `st_size`), a first read(2) that returns exactly
    /// `expected` bytes of the `expected + 1` asked for is the end: the file has the size it said,
    /// and the read(2) that would return 0 is saved.
    func read(upTo limit: Int, expected: Int, sizeIsKnown: Bool = false) throws(SystemError) -> [UInt8] {
        guard limit > 0 else { return [] }
        // The byte past `expected` shows a file that grew: the buffer is then doubled.
        var capacity = max(0, expected) < limit ? max(0, expected) + 1 : limit
        var bytes: [UInt8] = []
        while true {
            var failure: SystemError?
            var ended = false
            let kept = bytes
            bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                count = buffer.initialize(fromContentsOf: kept)
                while count < capacity {
                    let asked = capacity - count
                    let got = Glibc.read(rawValue, buffer.baseAddress! + count, asked)
                    if got > 0 {
                        count += got
                        if sizeIsKnown, got < asked, count == expected, kept.isEmpty {
                            ended = true
                            return
                        }
                    } else if got == 0 {
                        ended = true
                        return
                    } else if dfl_errno() != EINTR {
                        failure = SystemError(code: dfl_errno(), operation: "read", path: path)
                        return
                    }
                }
            }
            if let failure { throw failure }
            if ended || bytes.count >= limit { return bytes }
            capacity = capacity <= limit / 2 ? capacity * 2 : limit
        }
    }

    // MARK: - Extended attributes

    /// Sets the extended attribute `name` (`user.…`) to `value` (fsetxattr(2)).
    func setAttribute(_ name: String, to value: [UInt8]) throws(SystemError) {
        _ = try retryingEINTR("fsetxattr \(name)", path) {
            value.withUnsafeBytes { bytes in name.withCString { fsetxattr(rawValue, $0, bytes.baseAddress, bytes.count, 0) } }
        }
    }

    /// The value of the extended attribute `name` (fgetxattr(2)), at most `limit` bytes (a longer
    /// one is ERANGE); nil when the file has none (ENODATA).
    func attribute(_ name: String, limit: Int) throws(SystemError) -> [UInt8]? {
        var value = [UInt8](repeating: 0, count: limit)
        let result: Result<Int?, SystemError> = value.withUnsafeMutableBytes { buffer in
            Result { () throws(SystemError) in
                try retryingEINTR("fgetxattr \(name)", path, tolerating: ENODATA) {
                    fgetxattr(rawValue, name, buffer.baseAddress, buffer.count)
                }
            }
        }
        guard let length = try result.get() else { return nil }
        value.removeLast(value.count - length)
        return value
    }

    /// Removes the extended attribute `name` (fremovexattr(2)); a missing one is not an error.
    func removeAttribute(_ name: String) throws(SystemError) {
        _ = try retryingEINTR("fremovexattr \(name)", path, tolerating: ENODATA) {
            name.withCString { fremovexattr(rawValue, $0) }
        }
    }

    /// Takes an exclusive flock(2) without blocking; false when another process holds it.
    func tryLockExclusive() throws(SystemError) -> Bool {
        try retryingEINTR("flock", path, tolerating: EWOULDBLOCK) { flock(rawValue, LOCK_EX | LOCK_NB) } != nil
    }
}
