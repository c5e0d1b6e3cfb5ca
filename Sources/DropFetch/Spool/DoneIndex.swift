import Glibc

/// The spool's index of what done/ holds, for duplicates (DESIGN §10 "Duplicates"): each agent
/// appends to `<spool>/.done-urls.<agent>`, where it files a job into done/, one line per download
/// that finished, `<URLKey> <record name>` (the name escaped as in `FilingJournal`; the key of the
/// URL it was fetched from), and, when a job judged under `duplicates: skip` starts to fetch,
/// `+<URLKey> <work name> <inode>`: the job in its work folder fetches that URL while a file of that
/// inode is there under that name (a later job of the URL waits). Every agent
/// reads every agent's file (`Lookup`), so a job filed by one is seen by the others. An index is a
/// hint as untrusted as any file a spool group member can write: a line says where to look, and
/// only the record in done/ and the file it names decide (`DuplicateCheck`), so a forged or stale
/// line can at most cause a fetch.
final class DoneIndex: Sendable {
    /// Index files begin with this name; another name is no index.
    static let prefix = ".done-urls."
    /// The first line; a file that does not begin with it is not read.
    static let header = "dropfetch-done-urls 1\n"

    let path: String
    private let file = Locked<FileDescriptor?>(nil)

    /// The index `agent` writes in the spool at `root`.
    init(root: String, agent: String) {
        path = root + "/" + DoneIndex.prefix + agent
    }

    /// Records that the job filed into done/ as `name` fetched `keys` (`URLKey.key` of each done
    /// download's URL). A failure is not the filing's: the lines are lost (a later job of the
    /// same URL is fetched) and the file opened again next time.
    func append(keys: [String], name: String, escaping: Bool = true) {
        guard !keys.isEmpty else { return }
        var tail: [UInt8] = [0x20]
        if escaping { FilingJournal.appendEscaped(name, to: &tail) } else { tail += name.utf8 }
        tail.append(0x0A)
        var lines: [UInt8] = []
        lines.reserveCapacity(keys.count * (tail.count + 33))
        for key in keys {
            lines += key.utf8
            lines += tail
        }
        file.withLock { file in
            do {
                if file == nil { file = try open() }
                try file?.write(lines)
            } catch {
                file = nil
            }
        }
    }

    /// Records that the job `workName` (its job file's inode `claim`) of this agent's work folder
    /// starts to fetch `keys`.
    func appendFetching(keys: [String], workName: String, claim: UInt64) {
        append(keys: keys.map { "+" + $0 }, name: FilingJournal.escaped(workName) + " \(claim)", escaping: false)
    }

    /// Opens the index for appending (never a symlink or a FIFO a peer planted), writing the header into a new one.
    private func open() throws(SystemError) -> FileDescriptor {
        let opened = try FileDescriptor.open(path, flags: O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK,
                                             mode: FilingJournal.mode)
        let info = try opened.status()
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw SystemError(code: EINVAL, operation: "open (not a regular file)", path: path) }
        if info.st_size == 0 { try opened.write(Array(DoneIndex.header.utf8)) }
        return opened
    }

    /// Every agent's index as one map from URL key to the records that fetched it, read on as the
    /// files grow (each from where the last read stopped). Bounded: at most `maxRead` bytes of a
    /// file at a time and `maxEntries` entries, past which lines are not taken (a fetch, not a skip).
    final class Lookup {
        static let maxRead = 8 << 20
        static let maxEntries = 4_000_000
        static let maxLine = 512

        private var offsets: [String: Int64] = [:]
        private var names: [String: [String]] = [:]
        /// Jobs said to fetch a URL (`+` lines): their agent and work name, the last few per key.
        /// The inode a line also gives is checked to be a number, not compared: two mounts of one
        /// GlusterFS volume number one file differently.
        private var fetching: [String: [(agent: String, workName: String)]] = [:]
        private(set) var entries = 0

        /// The records that fetched the URL of `key`, newest first.
        func records(for key: String) -> [String] {
            (names[key] ?? []).reversed()
        }

        /// The jobs of other agents than `agent` said to fetch the URL of `key`, as work folder
        /// paths below `workRoot`: one still there is still at it.
        func fetching(_ key: String, besides agent: String, workRoot: String) -> [String] {
            (fetching[key] ?? []).filter { $0.agent != agent }.map { workRoot + "/" + $0.agent + "/" + $0.workName }
        }

        /// Reads what every index in `root` gained since the last call.
        func refresh(root: String) {
            guard let listed = try? FileSystem.entries(of: root) else { return }
            for entry in listed where entry.name.hasPrefix(DoneIndex.prefix) {
                readOn(FileSystem.join(root, entry.name))
            }
        }

        private func readOn(_ path: String) {
            guard entries < Lookup.maxEntries,
                  let file = try? FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC),
                  let info = try? file.status(), (info.st_mode & S_IFMT) == S_IFREG else { return }
            let size = Int64(info.st_size)
            // Shorter than what was read: replaced by another file; begun again.
            if size < offsets[path] ?? 0 { offsets[path] = 0 }
            let agent = String(FileSystem.baseName(of: path).dropFirst(DoneIndex.prefix.count))
            // To the end, a chunk at a time: a check sees every line there was.
            while entries < Lookup.maxEntries {
                let start = offsets[path] ?? 0
                guard size > start, (try? file.seek(to: start)) != nil,
                      let bytes = try? file.read(upTo: Lookup.maxRead, expected: Int(min(size - start, Int64(Lookup.maxRead)))),
                      !bytes.isEmpty else { return }
                var position = 0
                if start == 0 {
                    let header = Array(DoneIndex.header.utf8)
                    guard bytes.count >= header.count, Array(bytes[0..<header.count]) == header else {
                        // Not an index of this version: never read (its length marks it read).
                        offsets[path] = size
                        return
                    }
                    position = header.count
                }
                let first = position
                while let end = bytes[position...].firstIndex(of: 0x0A) {
                    if end - position <= Lookup.maxLine { take(bytes[position..<end], agent: agent) }
                    position = end + 1
                    if entries >= Lookup.maxEntries { break }
                }
                if position == first {
                    // No whole line: an append in progress, read again next time; or a chunk
                    // without a newline, which is no line of ours and is passed over.
                    guard bytes.count == Lookup.maxRead else { return }
                    position = bytes.count
                }
                offsets[path] = start + Int64(position)
                if bytes.count < Lookup.maxRead { return }
            }
        }

        /// One `<32 hex> <escaped name>` or `+<32 hex> <escaped work name>` line of `agent`'s
        /// index; anything else is skipped.
        private func take(_ line: ArraySlice<UInt8>, agent: String) {
            let fetches = line.first == UInt8(ascii: "+")
            let fields = line.dropFirst(fetches ? 1 : 0).split(separator: 0x20, maxSplits: fetches ? 2 : 1,
                                                               omittingEmptySubsequences: false)
            guard fields.count == (fetches ? 3 : 2), fields[0].count == 32,
                  fields[0].allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
                  let name = RecentFilings.unescaped(fields[1]), Spool.isJobName(name), !name.utf8.contains(0x2F) else { return }
            let key = String(decoding: fields[0], as: UTF8.self)
            if fetches {
                guard UInt64(String(decoding: fields[2], as: UTF8.self)) != nil else { return }
                fetching[key, default: []].append((agent, name))
                if fetching[key]!.count > 16 { fetching[key]!.removeFirst() }
            } else {
                names[key, default: []].append(name)
            }
            entries += 1
        }
    }
}
