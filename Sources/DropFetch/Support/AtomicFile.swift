import Glibc

/// Writes whole files so that readers see the old content or the new, never a mix:
/// temp file with O_EXCL → write → fsync → rename → fsync the folder.
enum AtomicFile {
    static func write(_ bytes: [UInt8], to path: String, durable: Bool, mode: UInt32 = 0o644) throws(SystemError) {
        let folder = FileSystem.directoryName(of: path)
        let temp = folder + "/." + FileSystem.baseName(of: path) + ".\(getpid()).tmp"
        try? FileSystem.removeIfPresent(temp)
        do {
            let file = try FileDescriptor.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
            try file.write(bytes)
            if durable { try file.sync() }
            try FileSystem.rename(temp, to: path)
        } catch {
            try? FileSystem.removeIfPresent(temp)
            throw error
        }
        if durable { try FileSystem.syncDirectory(folder) }
    }
}
