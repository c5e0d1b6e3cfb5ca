import CLinux
import Glibc
import Synchronization

/// An open folder through which every file below it is reached with the *at(2) calls, one path
/// component at a time and never through a symlink (docs/security.md: paths are descriptors).
///
/// A cached handle is an open descriptor, not the result of a check: once opened, writes land in
/// this folder whatever is later renamed or replaced around it.
///
/// `Sendable`: its fields never change, so a request run on a worker thread can hold one.
final class DirectoryHandle: Sendable {
    let descriptor: Int32
    /// The path it was reached by, for messages only: nothing is opened through it again.
    let path: String
    /// The components below the root handle it was walked from (empty for a root).
    let components: [String]
    let device: UInt64
    let inode: UInt64
    /// Set once a file here refused a user extended attribute (ENOTSUP on NFS without them, EPERM
    /// or EACCES): the next ones are not asked (PartFile's owner mark).
    private let attributesRefused = Atomic<Bool>(false)

    private init(descriptor: Int32, path: String, components: [String]) throws(SystemError) {
        self.descriptor = descriptor
        self.path = path
        self.components = components
        var info = stat()
        if fstat(descriptor, &info) != 0 {
            let error = SystemError.current("fstat", path)
            Glibc.close(descriptor)
            throw error
        }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    deinit { Glibc.close(descriptor) }

    /// Opens a root folder (the destination or the spool) by its absolute path, creating it
    /// (mkdir -p) when asked; a root named in the config may itself be reached through symlinks.
    static func openRoot(_ path: String, create: Bool) throws(SystemError) -> DirectoryHandle {
        if create { try FileSystem.makeDirectories(path, trusting: path) }
        let fd = try retryingEINTR("open", path) { dfl_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
        return try DirectoryHandle(descriptor: fd, path: path, components: [])
    }

    /// The same folder named by `newPath` (a twin descriptor, fcntl(2) F_DUPFD_CLOEXEC): the admin
    /// moved it and the config names its new place; messages and status files then name that.
    func relabeled(_ newPath: String) throws(SystemError) -> DirectoryHandle {
        let fd = try retryingEINTR("fcntl (F_DUPFD_CLOEXEC)", newPath) { fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }
        return try DirectoryHandle(descriptor: fd, path: newPath, components: components)
    }

    /// The subfolder `name` (one component), created when missing; a symlink or anything but a
    /// folder is refused with ELOOP/ENOTDIR (openat(2) with O_NOFOLLOW | O_DIRECTORY).
    func subfolder(_ name: String, create: Bool) throws(SystemError) -> DirectoryHandle {
        guard DirectoryHandle.isPlainComponent(name) else {
            throw SystemError(code: EINVAL, operation: "open folder (not a single path component)", path: FileSystem.join(path, name))
        }
        let child = FileSystem.join(path, name)
        // Group-writable where the umask allows (the service's 0007), as FileSystem.makeDirectories.
        if create, mkdirat(descriptor, name, 0o775) != 0 {
            let code = dfl_errno()
            if code != EEXIST { throw SystemError(code: code, operation: "mkdir", path: child) }
        }
        let fd = dfl_openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
        if fd < 0 {
            let code = dfl_errno()
            // O_NOFOLLOW on a symlink reports ELOOP; O_DIRECTORY on a file ENOTDIR.
            throw SystemError(code: code, operation: code == ELOOP || code == ENOTDIR
                              ? "open folder (a symlink or file is in the way)" : "open folder", path: child)
        }
        return try DirectoryHandle(descriptor: fd, path: child, components: components + [name])
    }

    /// Walks `relative` (`a/b/c`) one component at a time below this folder.
    func descend(_ relative: String, create: Bool) throws(SystemError) -> DirectoryHandle {
        var current = self
        for component in relative.split(separator: "/") where component != "." {
            current = try current.subfolder(String(component), create: create)
        }
        return current
    }

    /// Whether `handle`, walked from this root, is still the folder found there now (same st_dev
    /// and st_ino): a folder moved out of the tree while in use is not published into.
    func stillContains(_ handle: DirectoryHandle) -> Bool {
        if handle === self { return true }
        guard let found = try? descend(handle.components.joined(separator: "/"), create: false) else { return false }
        return found.device == handle.device && found.inode == handle.inode
    }

    static func isPlainComponent(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/")
    }

    /// Whether files in this folder were seen to refuse user extended attributes.
    var refusesUserAttributes: Bool { attributesRefused.load(ordering: .relaxed) }

    func noteUserAttributesRefused() {
        attributesRefused.store(true, ordering: .relaxed)
    }

    // MARK: - Files in this folder

    /// openat(2) with O_NOFOLLOW and O_CLOEXEC; `mode` applies when the file is created.
    func open(_ name: String, flags: Int32, mode: UInt32 = 0o644) throws(SystemError) -> FileDescriptor {
        let full = FileSystem.join(path, name)
        let fd = try retryingEINTR("open", full) {
            name.withCString { dfl_openat(descriptor, $0, flags | O_NOFOLLOW | O_CLOEXEC, mode) }
        }
        return FileDescriptor(rawValue: fd, path: full)
    }

    /// fstatat(2) without following a final symlink; nil when nothing is there.
    func status(_ name: String) throws(SystemError) -> stat? {
        var info = stat()
        let found = try retryingEINTR("stat", FileSystem.join(path, name), tolerating: ENOENT) {
            name.withCString { fstatat(descriptor, $0, &info, AT_SYMLINK_NOFOLLOW) }
        }
        return found == nil ? nil : info
    }

    func exists(_ name: String) -> Bool { ((try? status(name)) ?? nil) != nil }

    /// The inode number the folder's own listing (readdir(3)) shows under each of `names`; a name
    /// that is not listed is absent from the result.
    ///
    /// A network file system's client answers lookups from its cache: on GlusterFS a mount keeps
    /// showing a name that another mount removed or replaced, with the old file, for up to a
    /// second (stat(2) and open(2) alike), while a listing is read from the server. Code that
    /// removes a name it did not create checks the listing first.
    func listedInodes(_ names: Set<String>) throws(SystemError) -> [String: UInt64] {
        let copy = try retryingEINTR("open", path) { dfl_openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
        guard let listing = fdopendir(copy) else {
            let error = SystemError.current("fdopendir", path)
            Glibc.close(copy)
            throw error
        }
        defer { closedir(listing) }
        var found: [String: UInt64] = [:]
        found.reserveCapacity(names.count)
        while found.count < names.count, let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if names.contains(name) { found[name] = UInt64(entry.pointee.d_ino) }
        }
        return found
    }

    /// unlinkat(2); a missing file is not an error.
    func removeIfPresent(_ name: String) throws(SystemError) {
        _ = try retryingEINTR("unlink", FileSystem.join(path, name), tolerating: ENOENT) {
            name.withCString { unlinkat(descriptor, $0, 0) }
        }
    }

    /// renameat(2) within this folder, replacing the target.
    func rename(_ from: String, to: String) throws(SystemError) {
        _ = try retryingEINTR("rename", FileSystem.join(path, from)) {
            from.withCString { source in to.withCString { renameat(descriptor, source, descriptor, $0) } }
        }
    }

    /// Renames `from` here to `to` in `target` without ever replacing (FileSystem.moveNoReplace).
    func moveNoReplace(_ from: String, to target: DirectoryHandle, as name: String) throws(SystemError) {
        try FileSystem.moveNoReplace(descriptor, from, target.descriptor, name,
                                     describing: FileSystem.join(path, from), FileSystem.join(target.path, name))
    }

    /// fsync(2) of the folder, so that the renames and creations in it are durable.
    func sync() throws(SystemError) {
        _ = try retryingEINTR("fsync", path) { fsync(descriptor) }
    }
}
