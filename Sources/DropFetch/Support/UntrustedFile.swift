import CLinux
import Glibc

/// Reads a file from a folder that others can write (the inbox, the destination, a shared spool)
/// without letting it block, redirect or exhaust the reader: openat(2) relative to the folder's
/// descriptor with O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, fstat(2) on the
/// descriptor before a byte is read (a regular file, optionally with one link, no longer than the
/// bound), then at most the bound read.
///
/// A FIFO, socket, device or folder planted under the name is refused by that fstat(2): O_NONBLOCK
/// makes the open of a FIFO without a writer return at once instead of waiting for one.
struct UntrustedFile {
    /// Why a file was not read.
    enum Refusal: Error, Equatable, CustomStringConvertible {
        /// Nothing under that name (ENOENT).
        case missing
        /// A symbolic link: not followed (ELOOP from O_NOFOLLOW).
        case symbolicLink
        /// A FIFO, socket, device or folder: `st_mode`'s type bits.
        case notRegular(mode: UInt32)
        /// More than one hard link where one was required.
        case hardLinked(links: UInt64)
        /// Longer than the bound (by fstat(2), or it grew while read).
        case tooLarge(size: Int64, limit: Int)
        /// open(2), fstat(2) or read(2) failed otherwise.
        case system(SystemError)

        /// Out of descriptors or memory (EMFILE, ENFILE, ENOMEM, ENOBUFS): the file itself is not
        /// at fault, and reading it again later may well work.
        var isTransient: Bool {
            guard case .system(let error) = self else { return false }
            return [EMFILE, ENFILE, ENOMEM, ENOBUFS, EAGAIN].contains(error.code)
        }

        var description: String {
            switch self {
            case .missing: return "no such file"
            case .symbolicLink: return "a symbolic link"
            case .notRegular(let mode): return "not a regular file (\(UntrustedFile.typeName(mode)))"
            case .hardLinked(let links): return "\(links) hard links"
            case .tooLarge(let size, let limit): return "\(size) bytes, over the limit of \(limit)"
            case .system(let error): return "\(error)"
            }
        }
    }

    var bytes: [UInt8]
    var inode: UInt64
    var device: UInt64
    /// Its modification time by the fstat(2) before the read, in nanoseconds since the epoch.
    var modified: Int64 = 0

    /// Reads `name` in the folder open as `folder` (or AT_FDCWD with a path); `singleLink` refuses
    /// a file with a second hard link, which could be another user's file linked in.
    static func read(_ name: String, in folder: Int32, describing path: String, limit: Int,
                     singleLink: Bool = false) throws(Refusal) -> UntrustedFile {
        let limit = max(limit, 0)
        let fd = name.withCString { dfl_openat(folder, $0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0) }
        if fd < 0 {
            let code = dfl_errno()
            if code == EINTR { return try read(name, in: folder, describing: path, limit: limit, singleLink: singleLink) }
            if code == ENOENT { throw .missing }
            if code == ELOOP { throw .symbolicLink }
            throw .system(SystemError(code: code, operation: "open", path: path))
        }
        let file = FileDescriptor(rawValue: fd, path: path)
        let info: stat
        do {
            info = try file.status()
        } catch {
            throw .system(error)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notRegular(mode: UInt32(info.st_mode)) }
        if singleLink, info.st_nlink != 1 { throw .hardLinked(links: UInt64(info.st_nlink)) }
        guard Int64(info.st_size) <= Int64(limit) else { throw .tooLarge(size: Int64(info.st_size), limit: limit) }
        let bytes: [UInt8]
        do {
            // One byte past the bound shows a file that grew after fstat(2).
            let (readLimit, overflow) = limit.addingReportingOverflow(1)
            bytes = try file.read(upTo: overflow ? Int.max : readLimit, expected: Int(info.st_size), sizeIsKnown: true)
        } catch {
            throw .system(error)
        }
        guard bytes.count <= limit else { throw .tooLarge(size: Int64(bytes.count), limit: limit) }
        return UntrustedFile(bytes: bytes, inode: UInt64(info.st_ino), device: UInt64(info.st_dev),
                             modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    /// `read` of a path (relative to the working directory): only the final component is kept from
    /// being a symlink, so callers that can should read through the folder's handle instead.
    static func read(atPath path: String, limit: Int, singleLink: Bool = false) throws(Refusal) -> UntrustedFile {
        try read(path, in: AT_FDCWD, describing: path, limit: limit, singleLink: singleLink)
    }

    static func typeName(_ mode: UInt32) -> String {
        let names: [mode_t: String] = [Glibc.S_IFIFO: "a FIFO", Glibc.S_IFSOCK: "a socket", Glibc.S_IFCHR: "a character device",
                                       Glibc.S_IFBLK: "a block device", Glibc.S_IFDIR: "a folder", Glibc.S_IFLNK: "a symbolic link"]
        let type = mode_t(mode) & S_IFMT
        return names[type] ?? "of type \(String(type, radix: 8))"
    }
}

extension DirectoryHandle {
    /// `UntrustedFile.read` of `name` in this folder: the read every file others can write goes through.
    func readUntrusted(_ name: String, limit: Int, singleLink: Bool = false) throws(UntrustedFile.Refusal) -> UntrustedFile {
        try UntrustedFile.read(name, in: descriptor, describing: FileSystem.join(path, name), limit: limit, singleLink: singleLink)
    }
}
