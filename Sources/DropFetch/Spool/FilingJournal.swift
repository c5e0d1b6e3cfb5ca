import Glibc

/// The per-agent journal of filings (`<spool>/.filings.<agent>`): one line per job filed into done/
/// or failed/, appended (O_APPEND write(2)) where the job is filed, so that `status` and the status
/// page find the newest results by reading the journals' tails (RecentFilings) instead of every
/// record. A hint only: the records are the truth, and a reader checks each named one is there.
///
/// Lines: a header `dropfetch-filings 1`, then `<filed, ns since the epoch> <d|f> <record name>`,
/// the name percent-escaped (`%`, space, controls). Past `rotationSize` the file is renamed to
/// `<name>.1` (replacing the one before) and begun again, so a journal never holds more than two
/// such generations: the view needs only the newest lines, retention removes the oldest records.
final class FilingJournal: Sendable {
    private struct State {
        var file: FileDescriptor?
        /// Bytes in the current file, by this writer's count (fstat(2) at the open).
        var size: Int64 = 0
    }

    /// The journal files of a spool begin with this; another name is no journal.
    static let prefix = ".filings."
    /// The first line; a file that does not begin with it (an older version, a torn or forged
    /// file) is not read.
    static let header = "dropfetch-filings 1\n"
    /// Less the umask: group members' commands (`cancel`) append to the agent's journal, as they
    /// move files in the spool's folders.
    static let mode: UInt32 = 0o664
    /// A journal longer than this is rotated at the next append.
    static let rotationSize: Int64 = 256 << 10

    let path: String
    private let state = Locked(State())

    /// The journal of `agent` in the spool at `root`.
    init(root: String, agent: String) {
        path = root + "/" + FilingJournal.prefix + agent
    }

    /// Appends the line of a record filed as `folder/name` at `time` (wall ns). A failure is not the
    /// filing's: the line is lost (the record is missing from the view, as one put into done/ by
    /// hand) and the journal is opened again at the next filing.
    func append(name: String, outcome: Spool.Outcome, at time: Int64 = FilingJournal.now()) {
        let line = FilingJournal.lineBytes(nanoseconds: time, outcome: outcome, name: name)
        state.withLock { state in
            do {
                if state.file == nil || state.size > FilingJournal.rotationSize { try open(&state) }
                try state.file?.write(line)
                state.size += Int64(line.count)
            } catch {
                state.file = nil
            }
        }
    }

    /// Opens the journal for appending (O_APPEND | O_NOFOLLOW | O_NONBLOCK: never a symlink or a
    /// FIFO planted by a peer), rotating it first when it is past `rotationSize`, and writes the
    /// header into a new one. One that does not begin with this version's header (an older
    /// binary's, or a peer's) is removed first: readers would never use it.
    private func open(_ state: inout State) throws(SystemError) {
        state.file = nil
        if !FilingJournal.beginsWithHeader(path) { try FileSystem.removeIfPresent(path) }
        if let info = try? FileSystem.lstatus(path), Int64(info.st_size) > FilingJournal.rotationSize {
            do {
                try FileSystem.rename(path, to: path + ".1")
            } catch where error.code == ENOENT {
                // Another writer of this journal (a command) rotated it first.
            }
        }
        let file = try FileDescriptor.open(path, flags: O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: FilingJournal.mode)
        let info = try file.status()
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw SystemError(code: EINVAL, operation: "open (not a regular file)", path: path) }
        var size = Int64(info.st_size)
        if size == 0 {
            try file.write(Array(FilingJournal.header.utf8))
            size = Int64(FilingJournal.header.utf8.count)
        }
        state.file = file
        state.size = size
    }

    /// Whether the file at `path` is missing, empty or begins with `header` (a regular file only).
    static func beginsWithHeader(_ path: String) -> Bool {
        let header = Array(FilingJournal.header.utf8)
        guard let file = try? FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK) else {
            return !FileSystem.exists(path)
        }
        guard let info = try? file.status(), (info.st_mode & S_IFMT) == S_IFREG else { return false }
        guard info.st_size > 0 else { return true }
        return (try? file.read(upTo: header.count, expected: header.count)) == header
    }

    /// One line of the journal.
    static func line(nanoseconds: Int64, outcome: Spool.Outcome, name: String) -> String {
        String(decoding: lineBytes(nanoseconds: nanoseconds, outcome: outcome, name: name), as: UTF8.self)
    }

    /// One line of the journal as the bytes written, built in one array.
    static func lineBytes(nanoseconds: Int64, outcome: Spool.Outcome, name: String) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(name.utf8.count + 24)
        var digits = String(nanoseconds)
        digits.withUTF8 { line.append(contentsOf: $0) }
        line.append(0x20)
        line.append(outcome == .done ? UInt8(ascii: "d") : UInt8(ascii: "f"))
        line.append(0x20)
        appendEscaped(name, to: &line)
        line.append(0x0A)
        return line
    }

    /// `%XX` for `%`, space, controls and DEL: a name holds any byte but `/` and NUL.
    static func escaped(_ name: String) -> String {
        var out: [UInt8] = []
        appendEscaped(name, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `name` escaped as `escaped` does, appended to `out`; a name with nothing to escape is copied whole.
    static func appendEscaped(_ name: String, to out: inout [UInt8]) {
        var name = name
        name.withUTF8 { bytes in
            guard bytes.contains(where: needsEscape) else { return out.append(contentsOf: bytes) }
            let hex = Array("0123456789ABCDEF".utf8)
            for byte in bytes {
                if needsEscape(byte) {
                    out += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
                } else {
                    out.append(byte)
                }
            }
        }
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte <= 0x20 || byte == 0x25 || byte == 0x7F
    }

    /// The wall clock in nanoseconds (clock_gettime(2) CLOCK_REALTIME).
    static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
