import CLinux
import Glibc

/// Thin wrappers over the path-based system calls the spool and transfers use.
enum FileSystem {
    /// mkdir -p (mkdir(2)): an existing component must be a real folder (lstat(2)), a planted
    /// symlink refused, except in `trusted` (a root the config names), where one only root or
    /// this user can have made is followed (`/srv/downloads` linked to another disk). The mode is
    /// cut by the umask: 0755 under 022, 0770 under the service's 0007 (group members move jobs).
    static func makeDirectories(_ path: String, mode: mode_t = 0o775, trusting trusted: String? = nil) throws(SystemError) {
        // The components of `path` that are `trusted`'s (the spool, a destination, the state folder).
        let trustedCount = trusted.map { trusted in
            let (inPath, inTrusted) = (path.split(separator: "/"), trusted.split(separator: "/"))
            return path.hasPrefix("/") == trusted.hasPrefix("/") && inPath.starts(with: inTrusted) ? inTrusted.count : 0
        } ?? 0
        var current = path.hasPrefix("/") ? "" : "."
        for (index, component) in path.split(separator: "/").enumerated() {
            current += "/" + component
            if mkdir(current, mode) == 0 { continue }
            let code = dfl_errno()
            if code == EEXIST, index < trustedCount ? isAdminsFolder(current) : isDirectory(current) { continue }
            if code == EEXIST {
                // A symlink or file where a folder belongs is never followed or replaced.
                throw SystemError(code: ENOTDIR, operation: "mkdir (something that is not a folder is in the way)",
                                  path: current)
            }
            throw SystemError(code: code, operation: "mkdir", path: current)
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        guard let info = try? lstatus(path) else { return false }
        return (info.st_mode & S_IFMT) == S_IFDIR
    }

    static func exists(_ path: String) -> Bool {
        (try? lstatus(path)) != nil
    }

    /// lstat(2): never follows a final symlink.
    static func lstatus(_ path: String) throws(SystemError) -> stat {
        var info = stat()
        _ = try retryingEINTR("lstat", path) { path.withCString { lstat($0, &info) } }
        return info
    }

    static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try retryingEINTR("rename", from) { Glibc.rename(from, to) }
    }

    /// rename(2) that fails with EEXIST instead of replacing (`moveNoReplace`).
    static func renameNoReplace(_ from: String, to: String) throws(SystemError) {
        try moveNoReplace(AT_FDCWD, from, AT_FDCWD, to, describing: from, to)
    }

    /// renameat2(2) with RENAME_NOREPLACE; where the file system lacks the flag (EINVAL on NFS,
    /// GlusterFS) link(2) then unlink(2) of the source, never an existence check then rename.
    ///
    /// The fallback arbitrates the *target*: of several processes linking files to one free name
    /// exactly one succeeds, the others get EEXIST. It does not arbitrate the source, so the source
    /// must be a name only this process moves (its own work folder, its own `.part`): on GlusterFS
    /// two clients that move one file to two names can both succeed, since link(2) goes by inode
    /// and an unlink(2) of a name another client already removed reports success. A source other
    /// processes move too goes through `moveIntoPrivateFolder`. A loser of the target (EEXIST)
    /// keeps its source; an unlink that fails takes the link back and reports the error.
    /// A crash between the two calls leaves the file under both names with st_nlink 2: recovery
    /// finishes the move (`Spool.completeInterruptedMoves`).
    static func moveNoReplace(_ fromFolder: Int32, _ from: String, _ toFolder: Int32, _ to: String,
                              describing source: @autoclosure () -> String, _ target: @autoclosure () -> String) throws(SystemError) {
        let renamed = try renameNoReplaceCall(fromFolder, from, toFolder, to, describing: source())
        if renamed != nil { return }
        _ = try retryingEINTR("link", target()) { linkat(fromFolder, from, toFolder, to, 0) }
        do {
            _ = try retryingEINTR("rename (link and unlink)", source()) { unlinkat(fromFolder, from, 0) }
        } catch {
            _ = unlinkat(toFolder, to, 0)
            throw error
        }
    }

    /// Moves `from`, a name other processes may move at the same moment (a job in the inbox), into
    /// a folder where only this process creates names (its own work folder), never replacing.
    /// renameat2(2) with RENAME_NOREPLACE; where the file system lacks the flag, rename(2) once
    /// lstat(2) found `to` free: nothing else creates names there, so the check cannot race, and of
    /// several processes renaming one file exactly one succeeds, the others get ENOENT.
    ///
    /// Not link(2) + unlink(2) (`moveNoReplace`): on GlusterFS, two agents on two client mounts
    /// both won the same claim that way (14 of 8,500 racing pairs in a probe; the winner also saw
    /// the loser's passing second link and refused the job as "2 hard links"), where rename(2)
    /// had exactly one winner in 2,000 of 2,000 and, through a mount that still showed the moved
    /// name, failed with ENOENT 300 times of 300 (link(2) succeeded there 300 times of 300).
    static func moveIntoPrivateFolder(_ from: String, to: String) throws(SystemError) {
        try moveIntoPrivateFolder(AT_FDCWD, from, AT_FDCWD, to, describing: from, to)
    }

    /// `moveIntoPrivateFolder` relative to two folder descriptors (renameat2(2), else fstatat(2)
    /// then renameat(2)): the names are single components, never resolved through a symlink.
    static func moveIntoPrivateFolder(_ fromFolder: Int32, _ from: String, _ toFolder: Int32, _ to: String,
                                      describing source: @autoclosure () -> String, _ target: @autoclosure () -> String) throws(SystemError) {
        let renamed = try renameNoReplaceCall(fromFolder, from, toFolder, to, describing: source())
        if renamed != nil { return }
        var info = stat()
        if fstatat(toFolder, to, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            throw SystemError(code: EEXIST, operation: "rename", path: target())
        }
        _ = try retryingEINTR("rename", source()) { renameat(fromFolder, from, toFolder, to) }
    }

    /// renameat2(2) with RENAME_NOREPLACE; nil where the file system lacks the flag (EINVAL, ENOSYS).
    /// The C strings are made once (a name of 15 bytes or less is passed from a copy on the stack).
    private static func renameNoReplaceCall(_ fromFolder: Int32, _ from: String, _ toFolder: Int32, _ to: String,
                                            describing source: @autoclosure () -> String) throws(SystemError) -> Int32? {
        try from.withCString { fromName in
            to.withCString { toName in
                Result { () throws(SystemError) in
                    try retryingEINTR("rename", source(), tolerating: EINVAL, ENOSYS) {
                        dfl_rename_noreplace(fromFolder, fromName, toFolder, toName)
                    }
                }
            }
        }.get()
    }

    static func unlink(_ path: String) throws(SystemError) {
        _ = try retryingEINTR("unlink", path) { Glibc.unlink(path) }
    }

    /// Removes a file if it is there; other errors are reported.
    static func removeIfPresent(_ path: String) throws(SystemError) {
        _ = try retryingEINTR("unlink", path, tolerating: ENOENT) { path.withCString { Glibc.unlink($0) } }
    }

    /// fsync(2) on a directory so that renames and creations in it are durable.
    static func syncDirectory(_ path: String) throws(SystemError) {
        let directory = try FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY)
        try directory.sync()
    }

    /// Names in a directory, without `.` and `..` (readdir(3)); nil type means unknown.
    static func entries(of path: String) throws(SystemError) -> [(name: String, isDirectory: Bool?)] {
        guard let dir = opendir(path) else { throw SystemError.current("opendir", path) }
        defer { closedir(dir) }
        var result: [(String, Bool?)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name == "." || name == ".." { continue }
            let type = entry.pointee.d_type
            let isDirectory: Bool? = type == UInt8(DT_UNKNOWN) ? nil : type == UInt8(DT_DIR)
            result.append((name, isDirectory))
        }
        return result
    }

    /// Bytes available to unprivileged users on the file system holding `path` (statvfs(3)).
    static func availableBytes(at path: String) throws(SystemError) -> Int64 {
        var info = statvfs()
        _ = try retryingEINTR("statvfs", path) { statvfs(path, &info) }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Bytes available to unprivileged users on the file system holding `folder` (fstatvfs(3)).
    static func availableBytes(in folder: DirectoryHandle) throws(SystemError) -> Int64 {
        var info = statvfs()
        _ = try retryingEINTR("statvfs", folder.path) { fstatvfs(folder.descriptor, &info) }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Searched in the UTF-8 bytes: `/` is ASCII, so no grapheme breaking is needed to find it.
    /// The path's folder, found in the string's own storage (`withUTF8`): the `UTF8View`'s generic
    /// search cost tens of instructions a byte, and paths are split several times a job.
    static func directoryName(of path: String) -> String {
        var path = path
        return path.withUTF8 { bytes in
            guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
            if slash == 0 { return "/" }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[..<slash]), as: UTF8.self)
        }
    }

    static func baseName(of path: String) -> String {
        var copy = path
        return copy.withUTF8 { bytes in
            guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return path }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[(slash + 1)...]), as: UTF8.self)
        }
    }

    /// Whether `text` ends with the ASCII `suffix` as whole Characters, compared as bytes
    /// (`hasSuffix` walks grapheme breaks): the byte before it must be ASCII too, since a
    /// non-ASCII one (a Unicode "prepend" mark) can join the suffix's first character.
    static func hasASCIISuffix(_ text: String, _ suffix: StaticString) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            let count = suffix.utf8CodeUnitCount
            guard bytes.count >= count, bytes.count == count || bytes[bytes.count - count - 1] < 0x80 else { return false }
            return memcmp(bytes.baseAddress! + (bytes.count - count), suffix.utf8Start, count) == 0
        }
    }

    /// `path` with its leading folder `old` replaced by `new`; nil when `path` is not `old` or below it.
    static func moved(_ path: String, from old: String, to new: String) -> String? {
        if path == old { return new }
        let rest = path.utf8.dropFirst(old.utf8.count)
        guard path.utf8.starts(with: old.utf8), rest.first == UInt8(ascii: "/") else { return nil }
        return new + String(decoding: rest, as: UTF8.self)
    }

    /// `folder/name` made in one allocation: `folder + "/" + name` grows and copies the string
    /// once per piece, and paths are joined a dozen times a job.
    static func join(_ folder: String, _ name: String) -> String {
        concat(folder, "/", name)
    }

    /// `head` without its last `dropping` bytes (an ASCII suffix such as `.url`), then `middle`,
    /// then `tail` and `end`, made in one allocation.
    static func concat(_ head: String, dropping: Int = 0, _ middle: StaticString, _ tail: String = "",
                       _ end: String = "") -> String {
        var head = head
        var tail = tail
        var end = end
        return head.withUTF8 { first in
            // Dropped by characters, as `dropLast` does, unless the suffix and the byte before it are
            // ASCII (a non-ASCII one, a Unicode "prepend" mark, can join the suffix's first character).
            guard dropping <= first.count, dropping == 0 || first.suffix(dropping + 1).allSatisfy({ $0 < 0x80 }) else {
                return String(String(decoding: first, as: UTF8.self).dropLast(dropping)) + middle.description + tail + end
            }
            let kept = first.count - dropping
            return tail.withUTF8 { third in
                end.withUTF8 { last in
                    let count = kept + middle.utf8CodeUnitCount + third.count + last.count
                    return String(unsafeUninitializedCapacity: count) { out in
                        var at = out.baseAddress!
                        if let start = first.baseAddress { at.initialize(from: start, count: kept) }
                        at += kept
                        at.initialize(from: middle.utf8Start, count: middle.utf8CodeUnitCount)
                        at += middle.utf8CodeUnitCount
                        if let start = third.baseAddress { at.initialize(from: start, count: third.count) }
                        at += third.count
                        if let start = last.baseAddress { at.initialize(from: start, count: last.count) }
                        return count
                    }
                }
            }
        }
    }
}
