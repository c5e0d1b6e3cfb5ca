import Glibc

/// Writes whole files so that readers see the old content or the new, never a mix:
/// temp file with O_EXCL → write → fsync → rename → fsync the folder.
enum AtomicFile {
    /// This process's id, for temp names that concurrent agents on one spool do not share.
    private static let processID = getpid()

    /// The hidden temp name beside `path`.
    static func tempPath(for path: String) -> String {
        tempPath(in: FileSystem.directoryName(of: path), for: FileSystem.baseName(of: path))
    }

    /// The hidden temp name in `folder` for the file `name` there.
    static func tempPath(in folder: String, for name: String) -> String {
        FileSystem.concat(folder, "/.", name, suffix)
    }

    /// `.<pid>.tmp`, made once.
    private static let suffix = ".\(processID).tmp"

    /// `temp` names the temp file for a writer that must find it again after a crash (default:
    /// `tempPath(for: path)`).
    static func write(_ bytes: [UInt8], to path: String, durable: Bool, mode: UInt32 = 0o644,
                      temp: String? = nil) throws(SystemError) {
        let temp = temp ?? tempPath(for: path)
        try writeTemp(bytes, at: temp, mode: mode, durable: durable)
        do {
            try FileSystem.rename(temp, to: path)
        } catch {
            try? FileSystem.removeIfPresent(temp)
            throw error
        }
        if durable { try FileSystem.syncDirectory(FileSystem.directoryName(of: path)) }
    }

    /// `write` through an open folder, never durable: the temp created there (O_EXCL, O_NOFOLLOW),
    /// its mode set to `mode` with fchmod(2) whatever the umask, then renamed over `name`
    /// (renameat(2)), so that no symlink swapped in for the folder or the file is followed.
    static func write(_ bytes: [UInt8], named name: String, in folder: DirectoryHandle, mode: UInt32) throws(SystemError) {
        let temp = "." + name + ".\(processID).tmp"
        try folder.removeIfPresent(temp)
        do {
            let file = try folder.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL, mode: mode)
            try file.setMode(mode)
            try file.write(bytes)
            try folder.rename(temp, to: name)
        } catch {
            try? folder.removeIfPresent(temp)
            throw error
        }
    }

    /// The first half of `write`: `temp` created (O_EXCL) with `bytes`, fsynced when `durable`;
    /// removed again when that fails.
    static func writeTemp(_ bytes: [UInt8], at temp: String, mode: UInt32, durable: Bool) throws(SystemError) {
        let file = try createTemp(bytes, at: temp, mode: mode)
        guard durable else { return }
        do {
            try file.sync()
        } catch {
            try? FileSystem.removeIfPresent(temp)
            throw error
        }
    }

    /// `temp` created (O_EXCL) holding `bytes`, not synced, and left open for the caller's sync;
    /// removed again when that fails.
    static func createTemp(_ bytes: [UInt8], at temp: String, mode: UInt32) throws(SystemError) -> FileDescriptor {
        do {
            let file = try createExclusive(temp, mode: mode)
            try file.write(bytes)
            return file
        } catch {
            try? FileSystem.removeIfPresent(temp)
            throw error
        }
    }

    /// Creates `temp` with O_EXCL; a leftover of a crashed run of this same process id is removed first.
    static func createExclusive(_ temp: String, mode: UInt32) throws(SystemError) -> FileDescriptor {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
        do {
            return try FileDescriptor.open(temp, flags: flags, mode: mode)
        } catch where error.code == EEXIST {
            try FileSystem.unlink(temp)
            return try FileDescriptor.open(temp, flags: flags, mode: mode)
        }
    }
}
