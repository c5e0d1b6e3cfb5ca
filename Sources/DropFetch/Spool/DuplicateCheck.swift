import Glibc

/// Whether a job is a duplicate of one in done/ (DESIGN §10 "Duplicates"): every one of its
/// downloads has a URL (a mirror's counts) of a download that a job still in done/ finished, whose
/// file is still in the destination with the size its record gives, and, for a download with
/// `checksum=`, whose SHA-256 is the one asked for. The index only says where to look: each
/// record and file is read here, so a forged or stale index line can at most cause a fetch.
enum DuplicateCheck {
    enum Verdict: Equatable {
        case fetch
        /// Filed as a duplicate of done/`of`: each download's entry as the earlier one finished it.
        case duplicate(of: String, downloads: [DownloadStatus])
    }

    /// Records looked at for one URL, newest first: a URL fetched over and over has one good record near the top.
    static let maxCandidates = 8

    /// The verdict for `spec`, from the index `lookup` and the records in `done`; a record's file
    /// counts only below one of `destinations` (the agent's destination roots) or as this user's.
    static func judge(_ spec: JobSpec, lookup: DoneIndex.Lookup, done: String, destinations: [String]) -> Verdict {
        guard !spec.downloads.isEmpty else { return .fetch }
        var records: [String: StatusRecord?] = [:]
        func record(_ name: String) -> StatusRecord? {
            if let known = records[name] { return known }
            // The job file beside it: a lone status (a filing half undone, a purge under way) is no record.
            let found = FileSystem.exists(FileSystem.join(done, name)) ? Spool.readRecord(at: done + "/" + Spool.statusName(forJob: name)) : nil
            records[name] = found
            return found
        }
        var earlier: String?
        var entries: [DownloadStatus] = []
        for download in spec.downloads {
            guard let (name, entry) = match(download, lookup: lookup, destinations: destinations, record: record) else {
                return .fetch
            }
            earlier = earlier ?? name
            entries.append(entry)
        }
        guard let earlier else { return .fetch }
        return .duplicate(of: earlier, downloads: entries)
    }

    /// The first record (newest first) holding a finished download of one of `download`'s URLs
    /// whose file is still there, whole, and right for its `checksum=`.
    private static func match(_ download: DownloadSpec, lookup: DoneIndex.Lookup, destinations: [String],
                              record: (String) -> StatusRecord?) -> (String, DownloadStatus)? {
        for url in download.urls {
            // The index is keyed by the whole URL; the record keeps it without credentials.
            let key = URLKey.key(url)
            let shown = URLKey.normalized(Redaction.url(url))
            for name in lookup.records(for: key).prefix(maxCandidates) {
                guard let found = record(name), found.state == .done else { continue }
                for entry in found.downloads where entry.state == .done && URLKey.normalized(entry.url) == shown {
                    // A file below a destination of this agent, or one an agent of this user wrote
                    // (another agent's record names the file as its own mount shows it): never
                    // another user's file a forged record points at.
                    guard let file = entry.file, let info = try? FileSystem.lstatus(file),
                          (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == entry.bytes,
                          isBelow(file, destinations) || info.st_uid == geteuid() else { continue }
                    if let checksum = download.checksum {
                        guard checksum.algorithm == .sha256, entry.sha256 == checksum.hex else { continue }
                    }
                    return (name, entry)
                }
            }
        }
        return nil
    }

    /// Whether `path` names a file below one of `roots`, with no `.` or `..` step out of it.
    static func isBelow(_ path: String, _ roots: [String]) -> Bool {
        let steps = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !steps.contains(where: { $0 == "." || $0 == ".." }) else { return false }
        return roots.contains { root in path.hasPrefix(root.hasSuffix("/") ? root : root + "/") }
    }
}
