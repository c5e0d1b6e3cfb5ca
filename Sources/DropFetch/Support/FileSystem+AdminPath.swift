import Glibc

extension FileSystem {
    /// Whether `path` leads to a folder through symlinks only root or this user can have made:
    /// each link met, at any depth of a chain, lies in a folder that is theirs and writable by no
    /// one else (not /tmp, not a group-writable spool). Resolved one hop at a time (readlink(2)),
    /// at most 40 links, as path_resolution(7) allows.
    static func isAdminsFolder(_ path: String) -> Bool {
        // The real folder reached so far ("" for /), and the components still to walk, last first.
        var reached = path.hasPrefix("/") ? "" : "."
        var rest = components(of: path)
        var links = 0
        while let component = rest.popLast() {
            if component == "." { continue }
            if component == ".." {
                reached = reached == "" || reached == "." ? reached : directoryName(of: reached)
                if reached == "/" { reached = "" }
                continue
            }
            let next = reached + "/" + component
            guard let info = try? lstatus(next) else { return false }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                reached = next
            case S_IFLNK:
                links += 1
                guard links <= 40, isAdminsOnly(reached.isEmpty ? "/" : reached), let target = linkTarget(next) else { return false }
                if target.hasPrefix("/") { reached = "" }
                rest += components(of: target)
            default:
                return false
            }
        }
        return true
    }

    /// Whether `run` may make or use `path` as a configured root (`makeDirectories(trusting:)`):
    /// the part of it that exists (lstat(2), so a dangling link counts) is `isAdminsFolder`.
    static func isAdminsRoot(_ path: String) -> Bool {
        var probe = path
        while (try? lstatus(probe)) == nil {
            guard probe != "/", probe != ".", !probe.isEmpty else { return false }
            probe = directoryName(of: probe)
        }
        return isAdminsFolder(probe)
    }

    /// The components of `path`, last first (a stack).
    private static func components(of path: String) -> [String] {
        path.split(separator: "/").reversed().map(String.init)
    }

    /// Whether the folder at `path` is root's or this user's and writable by no one else (stat(2)).
    private static func isAdminsOnly(_ path: String) -> Bool {
        var info = stat()
        return path.withCString { stat($0, &info) } == 0 && (info.st_uid == 0 || info.st_uid == geteuid())
            && info.st_mode & (S_IWGRP | S_IWOTH) == 0
    }

    /// readlink(2) of the link at `path`.
    private static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink(path, &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
