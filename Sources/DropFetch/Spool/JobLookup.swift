/// The job a person named on the command line (`file.iso`, `file.iso.url`, `file.i`): an exact
/// job file name with or without `.url`, else the one job whose name starts with what was typed,
/// both case-sensitive. A name that matches several jobs (an ambiguous prefix, or one name in
/// several folders) is an error listing them, and moves nothing; nothing matches only when no
/// folder has such a job (docs/spool.md "Naming a job").
public enum JobLookup {
    /// A job file found in one of the searched folders.
    public struct Match: Sendable, Equatable {
        public var folder: String
        public var name: String
        public var path: String { FileSystem.join(folder, name) }
    }

    /// The job files (Spool.isJobName) in `folders`, in folder order, by readdir(3).
    public static func jobs(in folders: [String]) -> [Match] {
        folders.flatMap { folder in
            ((try? FileSystem.entries(of: folder)) ?? []).map(\.name).filter(Spool.isJobName).sorted()
                .map { Match(folder: folder, name: $0) }
        }
    }

    /// `top` and every folder below it, at most `Spool.InboxScan.maxDepth` deep: routing folders
    /// (`inbox/r1/r2`), never a hidden name or a symlink.
    public static func folders(below top: String, depth: Int = 0) -> [String] {
        guard depth <= Spool.InboxScan.maxDepth else { return [] }
        let children = ((try? FileSystem.entries(of: top)) ?? [])
            .filter { !$0.name.hasPrefix(".") && $0.isDirectory != false }
            .map { top + "/" + $0.name }
            .filter(FileSystem.isDirectory)
            .sorted()
        return [top] + children.flatMap { folders(below: $0, depth: depth + 1) }
    }

    /// The path of the job `typed` names among `folders`; `verb` and `places` word the errors
    /// (`cannot hold x: no such job in inbox, work`); a candidate is listed with its folder
    /// relative to `root`.
    public static func find(_ typed: String, in folders: [String], verb: String, places: String,
                            root: String? = nil) throws(SpoolControl.ControlError) -> String {
        guard !typed.isEmpty, !typed.contains("/"), !typed.hasPrefix(".") else {
            throw SpoolControl.ControlError(message: "'\(typed)' is not a job name (a file name ending in .url)")
        }
        let all = jobs(in: folders)
        let exact = all.filter { ($0.name == typed && Spool.isJobName(typed)) || $0.name == typed + ".url" }
        let found = exact.isEmpty ? all.filter { $0.name.hasPrefix(typed) } : exact
        if found.count == 1 { return found[0].path }
        if found.isEmpty {
            throw SpoolControl.ControlError(message: "cannot \(verb) \(typed): no such job in \(places)")
        }
        let listed = found.map { match in
            let folder = root.flatMap { match.folder.hasPrefix($0 + "/") ? String(match.folder.dropFirst($0.count + 1)) : nil }
                ?? FileSystem.baseName(of: match.folder)
            return "  " + String(match.name.dropLast(4)) + "  (" + folder + ")"
        }
        let what = exact.isEmpty ? "\(found.count) jobs start with it" : "\(found.count) jobs have that name"
        throw SpoolControl.ControlError(message: "cannot \(verb) \(typed): \(what); name one:\n" + listed.joined(separator: "\n"))
    }
}
