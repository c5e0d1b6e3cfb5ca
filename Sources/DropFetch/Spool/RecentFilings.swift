/// The newest finished jobs read from the spool's filing journals (FilingJournal) rather than from
/// every record of done/ and failed/: `status`, `status --json` and the status page stay as fast
/// with a million finished jobs as with ten (DESIGN.md §10).
///
/// The journals are files any member of the spool's group can write, so they are read as such:
/// each through `UntrustedFile` with a bound, parsed strictly, and only as a hint. A record a line
/// names is shown only once read from done/ or failed/ with its job file beside it. A journal that
/// is not one of this version, a line that does not parse, or journals that name fewer records
/// than asked for give nil: the caller then scans the folders (SpoolStatus.scanRecent).
enum RecentFilings {
    /// One line of a journal.
    struct Line: Equatable {
        var nanoseconds: Int64
        var outcome: Spool.Outcome
        var name: String
    }

    /// The most read of one journal file: four rotations' worth; a longer one is not a journal of ours.
    static let maxJournalSize = 4 * Int(FilingJournal.rotationSize)

    /// The newest `limit` records, newest first; nil when the journals cannot answer.
    static func read(root: String, done: String, failed: String, limit: Int) -> [StatusRecord]? {
        guard limit > 0 else { return [] }
        guard let entries = try? FileSystem.entries(of: root) else { return nil }
        let journals = entries.map(\.name).filter { $0.hasPrefix(FilingJournal.prefix) && !$0.hasSuffix(".tmp") }
        guard !journals.isEmpty else { return nil }
        var lines: [(line: Line, order: Int)] = []
        for name in journals {
            let file: UntrustedFile
            do {
                file = try UntrustedFile.read(atPath: FileSystem.join(root, name), limit: maxJournalSize)
            } catch .missing {
                // Rotated between the listing and the read: its lines are in the `.1` file.
                continue
            } catch {
                return nil
            }
            guard let parsed = parse(file.bytes) else { return nil }
            for line in parsed { lines.append((line, lines.count)) }
        }
        // Newest first; of two lines of one time, the later in its file.
        lines.sort { ($0.line.nanoseconds, $0.order) > ($1.line.nanoseconds, $1.order) }
        var seen = Set<String>()
        var records: [StatusRecord] = []
        for (line, _) in lines {
            let folder = line.outcome == .done ? done : failed
            guard seen.insert(FileSystem.join(folder, line.name)).inserted else { continue }
            guard FileSystem.exists(FileSystem.join(folder, line.name)),
                  let record = Spool.readRecord(at: folder + "/" + Spool.statusName(forJob: line.name)) else { continue }
            records.append(record)
            if records.count == limit { return records }
        }
        return nil
    }

    /// The complete lines of one journal file, in file order; nil when it lacks this version's
    /// header or a complete line does not parse. A last line without its newline is an append in
    /// progress (or torn by a crash) and is left out.
    static func parse(_ bytes: [UInt8]) -> [Line]? {
        let header = Array(FilingJournal.header.utf8)
        guard bytes.count >= header.count, Array(bytes[0..<header.count]) == header else { return nil }
        var lines: [Line] = []
        var start = header.count
        while let end = bytes[start...].firstIndex(of: 0x0A) {
            guard let line = parseLine(bytes[start..<end]) else { return nil }
            lines.append(line)
            start = end + 1
        }
        return lines
    }

    /// `<nanoseconds> <d|f> <escaped name>`, the name a job record's name once unescaped.
    static func parseLine(_ bytes: ArraySlice<UInt8>) -> Line? {
        let fields = bytes.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, (1...19).contains(fields[0].count), fields[0].allSatisfy({ (0x30...0x39).contains($0) }),
              let nanoseconds = Int64(String(decoding: fields[0], as: UTF8.self)), fields[1].count == 1,
              let name = unescaped(fields[2]), Spool.isJobName(name), !name.utf8.contains(0x2F) else { return nil }
        switch fields[1].first {
        case UInt8(ascii: "d"): return Line(nanoseconds: nanoseconds, outcome: .done, name: name)
        case UInt8(ascii: "f"): return Line(nanoseconds: nanoseconds, outcome: .failed, name: name)
        default: return nil
        }
    }

    /// The inverse of `FilingJournal.escaped`; nil for a byte that should have been escaped, a
    /// broken escape, NUL, or text that is not UTF-8.
    static func unescaped(_ bytes: ArraySlice<UInt8>) -> String? {
        func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: return byte - 0x30
            case 0x41...0x46: return byte - 0x41 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte > 0x20, byte != 0x7F else { return nil }
            if byte == 0x25 {
                guard index + 2 < bytes.endIndex,
                      let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
                let value = high << 4 | low
                guard value != 0 else { return nil }
                out.append(value)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
