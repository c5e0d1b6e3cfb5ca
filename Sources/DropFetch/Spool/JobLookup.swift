/// The job a person named on the command line (`file.iso`, `file.iso.url`, `file.i`): an exact
/// job file name with or without `.url`, else the one job whose name starts with what was typed.
/// An ambiguous prefix lists its candidates; nothing matches only when no folder has such a job.
public enum JobLookup {
    /// A job file found in one of the searched folders.
    public struct Match: Sendable, Equatable {
        public var folder: String
        public var name: String
        public var path: String { folder + "/" + name }
    }

    /// The job files (Spool.isJobName) in `folders`, in folder order, by readdir(3).
    public static func jobs(in folders: [String]) -> [Match] {
        folders.flatMap { folder in
            ((try? FileSystem.entries(of: folder)) ?? []).map(\.name).filter(Spool.isJobName).sorted()
                .map { Match(folder: folder, name: $0) }
        }
    }

    /// The path of the job `typed` names among `folders`; `verb` and `places` word the errors
    /// (`cannot hold x: no such job in inbox, work`).
    public static func find(_ typed: String, in folders: [String], verb: String,
                            places: String) throws(SpoolControl.ControlError) -> String {
        guard !typed.isEmpty, !typed.contains("/"), !typed.hasPrefix(".") else {
            throw SpoolControl.ControlError(message: "'\(typed)' is not a job name (a file name ending in .url)")
        }
        let all = jobs(in: folders)
        let withSuffix = typed + ".url"
        if let exact = all.first(where: { $0.name == typed && Spool.isJobName(typed) })
            ?? all.first(where: { $0.name == withSuffix }) {
            return exact.path
        }
        let lowered = typed.lowercased()
        if let exact = all.first(where: { $0.name.lowercased() == lowered || $0.name.lowercased() == lowered + ".url" }) {
            return exact.path
        }
        let prefixed = all.filter { $0.name.hasPrefix(typed) }
        if prefixed.count == 1 { return prefixed[0].path }
        if prefixed.isEmpty {
            throw SpoolControl.ControlError(message: "cannot \(verb) \(typed): no such job in \(places)")
        }
        let listed = prefixed.map { "  " + String($0.name.dropLast(4)) + "  (" + FileSystem.baseName(of: $0.folder) + ")" }
        throw SpoolControl.ControlError(
            message: "cannot \(verb) \(typed): \(prefixed.count) jobs start with it; name one:\n"
                + listed.joined(separator: "\n"))
    }
}
