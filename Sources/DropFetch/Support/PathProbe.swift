import CLinux
import Glibc

/// What `dropfetch check` asks of a path before `run` needs it, without creating anything: a folder
/// that is there or can be made, a folder that is there, a program posix_spawnp(3) can start. Each
/// answer is nil when all is well, or a sentence naming the path that is in the way.
///
/// Permissions are those of the calling process (access(2)); a folder on a kernel's pseudo
/// filesystem (`/proc`, `/sys`, …) is refused even for root, who access(2) lets "write" there.
enum PathProbe {
    /// A folder `run` will create with `mkdir -p` or write into: the nearest existing ancestor
    /// must be a folder this process may write and search, on a filesystem that holds files,
    /// reached through no symlink that `run` refuses.
    static func creatableFolder(_ path: String) -> String? {
        var probe = path
        while true {
            var info = stat()
            if stat(probe, &info) == 0 { break }
            let code = errno
            guard code == ENOENT || code == ENOTDIR, probe != "/", !probe.isEmpty else {
                return "\(probe): \(String(cString: strerror(code)))"
            }
            probe = FileSystem.directoryName(of: probe)
        }
        if let problem = writableFolder(probe) { return problem }
        // stat(2) alone passes a symlink that `run` then refuses (FileSystem.isAdminsRoot).
        return FileSystem.isAdminsRoot(path) ? nil : "\(path) \(PathProbe.refusedLink)"
    }

    /// Why `run` refuses a configured root reached through a symlink another user could replace.
    static let refusedLink = "is reached through a symlink in a folder that is not root's or this user's, or that others can write: run will not follow it"

    /// An existing folder this process may create files in (the folder of `metrics_file`).
    static func writableFolder(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(path) is not a folder" }
        if access(path, W_OK | X_OK) != 0 { return "\(path) is not writable: \(String(cString: strerror(errno)))" }
        if let kind = pseudoFilesystem(path) { return "\(path) is on \(kind), where files cannot be created" }
        return nil
    }

    /// A program as posix_spawnp(3) finds it: a name with a `/` as it is, otherwise the first
    /// executable regular file of that name in `searchPath` (`$PATH`; `/bin:/usr/bin` when unset).
    static func executable(_ program: String, searchPath: String?) -> String? {
        guard !program.isEmpty else { return "an empty program name" }
        if program.contains("/") { return executableFile(program) }
        let folders = (searchPath ?? "/bin:/usr/bin").split(separator: ":", omittingEmptySubsequences: false)
            .map { $0.isEmpty ? "." : String($0) }
        for folder in folders where executableFile(FileSystem.join(folder, program)) == nil { return nil }
        return "no executable of that name in PATH (\(searchPath ?? "/bin:/usr/bin"))"
    }

    /// Why `path` cannot be executed, in a few words without the path; nil when it can.
    private static func executableFile(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return String(cString: strerror(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { return "not a regular file" }
        if access(path, X_OK) != 0 { return "not executable (\(String(cString: strerror(errno))))" }
        return nil
    }

    /// The name of the pseudo filesystem `path` is on (statfs(2) `f_type`, linux/magic.h), if it is one.
    static func pseudoFilesystem(_ path: String) -> String? {
        var info = statfs()
        guard statfs(path, &info) == 0 else { return nil }
        return pseudoFilesystems[UInt64(truncatingIfNeeded: info.f_type)]
    }

    private static let pseudoFilesystems: [UInt64: String] = [
        0x9FA0: "proc", 0x6265_6572: "sysfs", 0x0027_E0EB: "cgroup", 0x6367_7270: "cgroup2",
        0x6462_6720: "debugfs", 0x7472_6163: "tracefs", 0x7363_6673: "securityfs", 0xCAFE_4A11: "bpf",
        0x6165_676C: "pstore", 0xDE5E_81E4: "efivarfs", 0x1CD1: "devpts", 0x6265_6570: "configfs",
        0xF97C_FF8C: "selinuxfs", 0x4341_5D53: "smackfs", 0x1980_0202: "mqueue", 0x4249_4E4D: "binfmt_misc",
        0x6573_5543: "fusectl", 0x6E73_6673: "nsfs",
    ].mapValues { "a \($0) filesystem" }
}
