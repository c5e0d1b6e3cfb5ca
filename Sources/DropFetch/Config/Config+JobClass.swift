extension Config {
    /// The first class that matches a job (docs/config.md, classes): by inbox folder, URL glob and
    /// host glob; a job's `class=` picks one by name, and an unknown name is an error.
    func resolveClass(spec: JobSpec, folder: String) -> Result<JobClass?, JobFileError> {
        Config.resolveClass(spec: spec, folder: folder, among: classes)
    }

    /// The same among `classes`: a caller holding the config in a class passes the one array it
    /// needs (a `Config` handed to a call that is not inlined is copied, with every string in it).
    static func resolveClass(spec: JobSpec, folder: String, among classes: [JobClass]) -> Result<JobClass?, JobFileError> {
        if let name = spec.className {
            guard let found = classes.first(where: { $0.name == name }) else {
                return .failure(JobFileError(line: nil, message: "unknown class '\(name)'"))
            }
            return .success(found)
        }
        let url = spec.downloads.first?.urls.first ?? ""
        let host = spec.downloads.first?.host() ?? ""
        let found = classes.first { jobClass in
            let match = jobClass.match
            if let wanted = match.folder, wanted != folder, !folder.hasPrefix(wanted + "/") { return false }
            if let pattern = match.url, !URLParts.glob(pattern, matches: url) { return false }
            if let pattern = match.host, !URLParts.glob(pattern, matches: host) { return false }
            return true
        }
        return .success(found)
    }

    func jobClass(named name: String) -> JobClass? {
        classes.first { $0.name == name }
    }
}
