/// What waits in the inbox, known without claiming it (docs/spool.md, invariant 7): each job
/// file's place in the queue, so that the agent claims a job only when it is about to run it
/// and agents sharing a spool share the work.
///
/// A file found by a scan rather than an inotify event is indexed only once settled: its mtime
/// at least two seconds old, so a writer still at work is never read half-done.
struct InboxIndex {
    /// A job file waiting in the inbox, as the scheduler orders it.
    struct Candidate: Sendable {
        /// Relative to the inbox, e.g. `urgent/x.url`.
        var path: String
        var arrival: Int64
    }

    /// How old an mtime must be (nanoseconds) before a scanned file counts as settled.
    static let settleTime: Int64 = 2_000_000_000

    private var candidates: [Int: Candidate] = [:]
    private var ids: [String: Int] = [:]
    /// Files seen by a scan while still changing: path → the mtime seen (nanoseconds).
    private var unsettled: [String: Int64] = [:]

    /// Job files' bytes as the index read them, for the claim to take instead of reading the
    /// file again when it is still that file (`SpoolClaim.Request.known`: three system calls a
    /// job). Kept for small files and at most `keptLimit` of them, so that a queue of a million
    /// jobs does not hold its files in memory.
    private var kept: [String: JobFileReader.Contents] = [:]
    static let keptLimit = 4096
    static let keptMaxBytes = 4096

    var count: Int { candidates.count }
    var unsettledCount: Int { unsettled.count }

    func contains(_ path: String) -> Bool { ids[path] != nil }

    func candidate(_ id: Int) -> Candidate? { candidates[id] }

    /// Room for `additional` more candidates at once: a scan that finds thousands of files grows
    /// each table once instead of doubling it (each doubling copies it into fresh pages).
    mutating func reserveCapacity(_ additional: Int) {
        candidates.reserveCapacity(candidates.count + additional)
        ids.reserveCapacity(ids.count + additional)
        kept.reserveCapacity(min(kept.count + additional, InboxIndex.keptLimit))
    }

    /// A new candidate, with the bytes read of its file kept when small and while there is room.
    /// (Each table is asked only when it may hold the path: a lookup hashes the whole path.)
    mutating func add(_ path: String, id: Int, arrival: Int64, contents: JobFileReader.Contents? = nil) {
        if !unsettled.isEmpty { unsettled[path] = nil }
        candidates[id] = Candidate(path: path, arrival: arrival)
        ids[path] = id
        if let contents, contents.bytes.count <= InboxIndex.keptMaxBytes, kept.count < InboxIndex.keptLimit {
            kept[path] = contents
        }
    }

    /// Forgets a candidate (claimed by this agent, or gone: another agent took it), and gives
    /// back the bytes kept of its file.
    @discardableResult
    mutating func remove(id: Int) -> JobFileReader.Contents? {
        guard let candidate = candidates.removeValue(forKey: id) else { return nil }
        ids[candidate.path] = nil
        return kept.isEmpty ? nil : kept.removeValue(forKey: candidate.path)
    }

    /// The file at `path` was written again (another close or move event): its kept bytes are stale.
    mutating func forgetContents(of path: String) {
        if !kept.isEmpty { kept[path] = nil }
    }

    /// A scanned file: settled when its mtime is old enough, else remembered for a later look.
    mutating func scanned(_ path: String, modified: Int64, now: Int64) -> Bool {
        if modified <= now - InboxIndex.settleTime {
            if !unsettled.isEmpty { unsettled[path] = nil }
            return true
        }
        unsettled[path] = modified
        return false
    }

    /// When the earliest unsettled file may have settled (wall nanoseconds); files written within
    /// a moment of it are waited for too, so that a batch is indexed together and runs in queue order.
    var nextSettleCheck: Int64? {
        guard let first = unsettled.values.min() else { return nil }
        let batch = unsettled.values.filter { $0 <= first + 250_000_000 }.max() ?? first
        return batch + InboxIndex.settleTime
    }

    /// Unsettled files to look at again; each is dropped here and comes back through `scanned`.
    mutating func takeUnsettled(dueBy now: Int64) -> [String] {
        let due = unsettled.filter { $0.value + InboxIndex.settleTime <= now }.map(\.key)
        for path in due { unsettled[path] = nil }
        return due.sorted()
    }

    /// A file settled by an inotify close or move event needs no waiting.
    mutating func settledByEvent(_ path: String) {
        if !unsettled.isEmpty { unsettled[path] = nil }
    }
}
