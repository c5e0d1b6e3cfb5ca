import DropFetch
import Foundation

/// What a user checks in a spool and its destination after crashes: the guarantees 1–5 of docs/spool.md,
/// the status files of §3, and the downloaded bytes. Each check returns the problems it found
/// as sentences, so a test can `#expect(problems.isEmpty, "\(problems)")` and see them all.
struct SpoolAudit {
    /// A job the test dropped, and the file it must produce.
    struct ExpectedJob: Sendable {
        /// The job file's name as dropped, e.g. `j007.url`.
        let name: String
        /// The URL path on the test server, e.g. `/f/j007.bin`.
        let path: String
        /// The file name in the destination.
        let file: String
        let body: [UInt8]
        let sha256: String

        init(name: String, path: String, file: String, body: [UInt8]) {
            self.name = name
            self.path = path
            self.file = file
            self.body = body
            sha256 = TestHTTPServer.sha256Hex(body)
        }
    }

    let fixture: SpoolFixture
    /// Where the downloads go (the fixture's destination unless a test moved it).
    var destination: String { fixture.destination }

    /// Every job-file record in the spool, by the job it belongs to (`x.url`, `x.3.url` → `x.url`),
    /// as paths relative to the spool.
    func jobRecords() -> [String: [String]] {
        var found: [String: [String]] = [:]
        for relative in files(under: fixture.spool) {
            let name = (relative as NSString).lastPathComponent
            guard name.hasSuffix(".url"), !name.hasPrefix(".") else { continue }
            found[SpoolAudit.jobName(ofRecord: name), default: []].append(relative)
        }
        return found
    }

    /// `x.url` for `x.url` and for the collision names `x.N.url` of invariant 5.
    static func jobName(ofRecord name: String) -> String {
        let stem = name.dropLast(4)
        if let dot = stem.lastIndex(of: "."), !stem[stem.index(after: dot)...].isEmpty,
           stem[stem.index(after: dot)...].allSatisfy(\.isNumber) {
            return String(stem[..<dot]) + ".url"
        }
        return name
    }

    // MARK: At any instant (the agent was just killed)

    /// Invariants that hold at every instant: each dropped job file is in exactly one place,
    /// every status file in done/ and failed/ is whole, and every file in the destination under
    /// a final name is complete. `checked` remembers files already verified, to keep soaks fast.
    func instantProblems(dropped: [ExpectedJob], checked: inout Set<String>) -> [String] {
        var problems: [String] = []
        let records = jobRecords()
        for job in dropped {
            let places = records[job.name] ?? []
            if places.count != 1 { problems.append("\(job.name) is in \(places.count) places: \(places)") }
        }
        let known = Set(dropped.map(\.name))
        for (name, places) in records where !known.contains(name) {
            problems.append("unexpected job file(s) \(places)")
        }
        for folder in ["done", "failed"] {
            for name in fixture.names(in: folder) where name.hasSuffix(".status.json") && !name.hasPrefix(".") {
                let key = folder + "/" + name
                if checked.contains(key) { continue }
                let path = fixture.spool + "/" + key
                guard let data = FileManager.default.contents(atPath: path), StatusRecord.decode(Array(data)) != nil else {
                    problems.append("\(key) does not decode")
                    continue
                }
                checked.insert(key)
            }
        }
        let byFile = Dictionary(dropped.map { ($0.file, $0) }) { first, _ in first }
        for name in destinationFiles() where !(name as NSString).lastPathComponent.hasPrefix(".") {
            let key = "dest/" + name
            if checked.contains(key) { continue }
            guard let job = byFile[name] else {
                problems.append("unexpected file \(name) in the destination")
                continue
            }
            guard let data = FileManager.default.contents(atPath: destination + "/" + name) else { continue }
            if data != Data(job.body) {
                problems.append("\(name) is published with \(data.count) bytes that are not the server's \(job.body.count)")
            } else {
                checked.insert(key)
            }
        }
        return problems
    }

    // MARK: When everything is over

    /// The end state after a final run: every job filed once, in done/, under its own name, with
    /// a status file that decodes and says done, its file present with the server's bytes and
    /// sha256, nothing left in inbox, work or hold (but an agent's `.lock` and `.lease`), no
    /// `.part`, `.part.json`, `.tmp` or state file anywhere, and nothing written outside the spool
    /// and destination.
    func finalProblems(jobs: [ExpectedJob]) -> [String] {
        var problems: [String] = []
        let records = jobRecords()
        var expectedFiles: Set<String> = []
        for job in jobs {
            let places = records[job.name] ?? []
            guard places.count == 1, let place = places.first else {
                problems.append("\(job.name) is filed \(places.count) times: \(places)")
                continue
            }
            let folder = (place as NSString).deletingLastPathComponent
            let recordName = (place as NSString).lastPathComponent
            guard folder == "done" else {
                problems.append("\(job.name) ended in \(place)")
                continue
            }
            if recordName != job.name { problems.append("\(job.name) is filed as \(recordName): a second record") }
            let status: StatusRecord
            do {
                status = try fixture.status(folder, recordName)
            } catch {
                problems.append("\(place): status file missing or not decodable (\(error))")
                continue
            }
            if status.job != job.name { problems.append("\(place): status job is \(status.job)") }
            if status.state != .done { problems.append("\(place): status state \(status.state) in done/") }
            expectedFiles.insert(job.file)
            guard status.downloads.count == 1, let download = status.downloads.first else {
                problems.append("\(place): \(status.downloads.count) download entries")
                continue
            }
            if download.state != .done { problems.append("\(place): download state \(download.state)") }
            if download.sha256 != job.sha256 { problems.append("\(place): status sha256 \(download.sha256 ?? "nil") is not the server's") }
            if download.bytes != Int64(job.body.count) { problems.append("\(place): status bytes \(download.bytes) of \(job.body.count)") }
            if download.file.map(fixture.canonical) != destination + "/" + job.file {
                problems.append("\(place): file \(download.file ?? "nil")")
            }
            guard let data = FileManager.default.contents(atPath: destination + "/" + job.file) else {
                problems.append("\(job.file) of \(job.name) is missing")
                continue
            }
            if data != Data(job.body) || TestHTTPServer.sha256Hex(Array(data)) != job.sha256 {
                problems.append("\(job.file) differs from the server's file (\(data.count) of \(job.body.count) bytes)")
            }
        }
        let known = Set(jobs.map(\.name))
        for (name, places) in records where !known.contains(name) { problems.append("unexpected job file(s) \(places)") }
        let present = Set(destinationFiles())
        for extra in present.subtracting(expectedFiles).sorted() { problems.append("left in the destination: \(extra)") }
        problems += leftoversInSpool()
        problems += writesOutside()
        return problems
    }

    /// Temp files, state files, orphan status files and stray job files in the spool.
    func leftoversInSpool() -> [String] {
        var problems: [String] = []
        for relative in files(under: fixture.spool) {
            let name = (relative as NSString).lastPathComponent
            let folder = relative.split(separator: "/").first.map(String.init) ?? ""
            if name.hasSuffix(".tmp") { problems.append("temp file left: \(relative)"); continue }
            switch folder {
            case "work":
                // An agent's lock and its lease (DESIGN.md §10 Fencing: kept for the next epoch).
                if name != ".lock" && name != ".lease" { problems.append("left in a work folder: \(relative)") }
            case "done", "failed":
                if name.hasSuffix(".status.json") {
                    let job = String(relative.dropLast(".status.json".count)) + ".url"
                    if !FileManager.default.fileExists(atPath: fixture.spool + "/" + job) {
                        problems.append("status file without its job file: \(relative)")
                    }
                } else if !name.hasSuffix(".url") {
                    problems.append("unexpected file \(relative)")
                }
            default:
                // The agents' filing journals (FilingJournal), done indexes (DoneIndex) and metrics counters sit in the spool's root.
                if relative.hasPrefix(".filings.") || relative.hasPrefix(".done-urls.") || relative.hasPrefix(".metrics.") { continue }
                if !name.hasSuffix(".url") { problems.append("unexpected file \(relative)") }
            }
        }
        return problems
    }

    /// Anything in the fixture's root beyond the spool, destination, configs, logs and the
    /// (empty) working folder the agents ran in.
    func writesOutside() -> [String] {
        var problems: [String] = []
        let root = fixture.root.path
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
            let allowed = name == "spool" || name == "downloads" || name == "cwd"
                || (name.hasPrefix("config") && name.hasSuffix(".yaml")) || name.hasSuffix(".log")
            if !allowed { problems.append("written outside the spool and destination: \(root)/\(name)") }
        }
        if fixture.views[0] != root {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: fixture.views[0])) ?? []
            where name != "spool" && name != "downloads" {
                problems.append("written outside the spool and destination: \(fixture.views[0])/\(name)")
            }
        }
        let stray = (try? FileManager.default.contentsOfDirectory(atPath: fixture.workingDirectory)) ?? []
        if !stray.isEmpty { problems.append("written into the agent's working folder: \(stray)") }
        return problems
    }

    /// Files (not folders) under the destination, relative to it, hidden ones included.
    func destinationFiles() -> [String] { files(under: destination) }

    /// Regular files under `root`, relative to it, in sorted order.
    func files(under root: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var result: [String] = []
        while let relative = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
                result.append(relative)
            }
        }
        return result.sorted()
    }
}
