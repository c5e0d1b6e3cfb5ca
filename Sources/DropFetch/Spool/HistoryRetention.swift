import Glibc

/// Finished jobs' record pairs removed from done/ and failed/ under a `history:` rule (DESIGN.md
/// §10, docs/spool.md): those whose status file's `finished` time is older than `keep`, and past
/// `max_jobs` the oldest. A pair goes job file first, then status file; a status file whose job
/// file is gone (a pass stopped between the two) goes in a later pass. Nothing else is touched:
/// not inbox/, work/ or hold/, not a downloaded file. Several agents may remove at once: a file
/// already gone (ENOENT) is another remover's, and counts as theirs.
///
/// A status file that cannot be read or gives no `finished` time is kept, and not counted
/// against `max_jobs`: what is not understood is never removed.
struct HistoryRetention {
    /// One record of done/ or failed/.
    struct Record {
        let folder: DirectoryHandle
        /// The job file's name; nil for a status file alone.
        let job: String?
        let status: String
        /// The status file's `finished` time (Unix seconds).
        let finished: Int64
        /// The status file's modification time (ns): of two records finished in one second, the later.
        let modified: Int64

        /// Older first: by `finished`, then by when the status was written.
        func isOlder(than other: Record) -> Bool { (finished, modified) < (other.finished, other.modified) }
    }

    /// What a rule selects: pairs oldest first, lone status files, and what it kept unread.
    struct Selection {
        var jobs: [Record] = []
        var loneStatuses: [Record] = []
        /// Finished jobs left in place.
        var kept = 0
        /// Status files that could not be read or gave no `finished` time (kept).
        var unreadable = 0
    }

    /// What a removal did.
    struct Removal: Sendable, Equatable {
        /// Finished jobs whose job file this pass removed.
        var removed = 0
        /// The first error other than ENOENT, if any (EACCES on another user's records).
        var error: SystemError?
    }

    /// A status file alone is removed only once this many seconds have passed since it was put in
    /// place (its ctime): a filing puts the status first and the job file a moment later, and an
    /// agent that died between the two has its filing completed by whoever adopts its folder.
    static let loneStatusGrace: Int64 = 60

    let done: String
    let failed: String

    init(spoolRoot: String) {
        done = spoolRoot + "/done"
        failed = spoolRoot + "/failed"
    }

    /// The records `rule` removes at `now` (Unix seconds); `stop` ends the reading early (an empty selection).
    func select(_ rule: Config.History, now: Int64, stop: () -> Bool = { false }) throws(SystemError) -> Selection {
        var pairs: [Record] = []
        var lone: [Record] = []
        var selection = Selection()
        for path in [done, failed] {
            let folder = try DirectoryHandle.openRoot(path, create: false)
            let names = try FileSystem.entries(of: path).map(\.name).filter { !$0.hasPrefix(".") }
            var jobByStem: [Substring: String] = [:]
            for name in names where Spool.isJobName(name) { jobByStem[name.dropLast(4)] = name }
            for name in names where name.hasSuffix(HistoryRetention.statusSuffix) {
                if stop() { return Selection() }
                let stem = name.dropLast(HistoryRetention.statusSuffix.utf8.count)
                guard !stem.isEmpty, let (finished, modified) = HistoryRetention.finishedTime(of: name, in: folder) else {
                    selection.unreadable += 1
                    continue
                }
                let record = Record(folder: folder, job: jobByStem[stem], status: name, finished: finished, modified: modified)
                if record.job == nil { lone.append(record) } else { pairs.append(record) }
            }
        }
        pairs.sort { $0.isOlder(than: $1) }
        var cut = 0
        if let keep = rule.keep {
            let limit = now - keep.wholeSeconds
            cut = pairs.partitioningIndex { $0.finished >= limit }
        }
        if let maxJobs = rule.maxJobs { cut = max(cut, pairs.count - maxJobs) }
        selection.jobs = Array(pairs[..<cut])
        selection.kept = pairs.count - cut
        let oldestKept = cut < pairs.count ? pairs[cut].finished : Int64.max
        for record in lone {
            let expired = rule.keep.map { record.finished < now - $0.wholeSeconds } ?? false
            let pastMax = rule.maxJobs != nil && record.finished < oldestKept
            guard expired || pastMax, let info = (try? record.folder.status(record.status)) ?? nil,
                  now - Int64(info.st_ctim.tv_sec) >= HistoryRetention.loneStatusGrace else { continue }
            selection.loneStatuses.append(record)
        }
        return selection
    }

    /// Removes what `selection` names, oldest first, until `stop` says to end; returns how many
    /// finished jobs this pass removed (a record another agent removed first is not counted).
    func remove(_ selection: Selection, stop: () -> Bool = { false }) -> Removal {
        var removal = Removal()
        func note(_ error: SystemError) { if removal.error == nil { removal.error = error } }
        for record in selection.jobs {
            if stop() { return removal }
            do {
                if let job = record.job, try HistoryRetention.unlink(job, in: record.folder) { removal.removed += 1 }
                _ = try HistoryRetention.unlink(record.status, in: record.folder)
            } catch {
                note(error)
            }
        }
        for record in selection.loneStatuses {
            if stop() { return removal }
            do {
                _ = try HistoryRetention.unlink(record.status, in: record.folder)
            } catch {
                note(error)
            }
        }
        return removal
    }

    static let statusSuffix = ".status.json"

    /// unlinkat(2) of `name` in `folder`: whether it was there (ENOENT: another remover was first).
    static func unlink(_ name: String, in folder: DirectoryHandle) throws(SystemError) -> Bool {
        try retryingEINTR("unlink", FileSystem.join(folder.path, name), tolerating: ENOENT) { unlinkat(folder.descriptor, name, 0) } != nil
    }

    /// The `finished` time of the status file `name` (UntrustedFile: a peer may have put anything
    /// there), by a look for the key as the agent writes it, else by decoding the whole record;
    /// with the file's modification time (ns).
    static func finishedTime(of name: String, in folder: DirectoryHandle) -> (finished: Int64, modified: Int64)? {
        guard let file = try? folder.readUntrusted(name, limit: StatusRecord.maxFileSize),
              let seconds = quickFinished(file.bytes) ?? StatusRecord.decode(file.bytes)?.finished.flatMap(Timestamp.parse)
        else { return nil }
        return (seconds, file.modified)
    }

    private static let finishedKey = Array("\n  \"finished\": \"".utf8)

    /// `"finished": "YYYY-MM-DDTHH:MM:SSZ"` at the top level of a record the agent wrote (a key at
    /// two spaces' indent: in a string a quote would be escaped); nil when not found as such.
    static func quickFinished(_ bytes: [UInt8]) -> Int64? {
        let key = finishedKey
        guard bytes.count > key.count + 20 else { return nil }
        var index = 0
        let last = bytes.count - key.count - 21
        while index <= last {
            if bytes[index] == key[0], bytes[index + 1] == key[1], Array(bytes[index..<index + key.count]) == key {
                let start = index + key.count
                guard bytes[start + 20] == UInt8(ascii: "\"") else { return nil }
                return rfc3339Seconds(bytes[start..<start + 20])
            }
            index += 1
        }
        return nil
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` as Unix seconds (days from the civil date, proleptic Gregorian).
    static func rfc3339Seconds(_ text: ArraySlice<UInt8>) -> Int64? {
        let bytes = Array(text)
        guard bytes.count == 20, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54, bytes[13] == 0x3A,
              bytes[16] == 0x3A, bytes[19] == 0x5A else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month), (1...31).contains(day),
              hour < 24, minute < 60, second < 61 else { return nil }
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }
}

private extension Duration {
    var wholeSeconds: Int64 { components.seconds }
}

private extension Array {
    /// The first index whose element satisfies `belongs`, for an array in which those elements come last.
    func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
