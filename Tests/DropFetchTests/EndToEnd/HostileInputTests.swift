import DropFetch
import Foundation
import Testing

/// Hostile job files and paths against the real binary (docs/job-files.md; docs/spool.md, guarantee 4):
/// each case of docs/hostile-inputs.md lands in its folder with its `error.kind`, nothing appears outside the
/// destination and the spool, planted links and their targets stay as they were, and a good job
/// dropped in the same `run --once` is done. The server cases are in `HostileInputServerTests`.
@Suite("Hostile input: job files and paths")
struct HostileInputTests {
    @Test("hostile job files are filed as docs/hostile-inputs.md says; the good job is done")
    func jobFiles() throws {
        try Self.run(Self.jobFileCases)
    }

    @Test("entries planted in the destination are avoided or replaced, never written through")
    func plantedPaths() throws {
        try Self.run(Self.plantedCases)
    }

    // MARK: - Job files (J)

    static let jobFileCases: [Case] = [
        Case(id: "J01", job: "J01.url", outcome: .failed(.invalidJob), setup: { c in
            try c.dropBytes("J01.url", Array("\(c.url("/J01/f.bin"))\n".utf8) + [0, 0x0A])
        }),
        Case(id: "J02", job: "J02.url", outcome: .failed(.invalidJob), setup: { c in
            try c.dropBytes("J02.url", Array("\(c.url("/J02/f.bin"))\n  out=J02-".utf8) + [0xC3, 0x28] + Array(".bin\n".utf8))
        }),
        Case(id: "J03", job: "J03.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J03.url", "\(c.url("/J03/f.bin"))\n  header=X-Test: a\rInjected: b\n")
        }, check: { c in
            #expect(c.server.requests.allSatisfy { $0.header("Injected") == nil }, "J03: a header was injected")
        }),
        Case(id: "J04", job: "J04.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J04.url", "\(c.url("/J04/f.bin"))\n  header=X-Test: \u{1B}[31mred\u{07}\n")
        }),
        Case(id: "J05", job: "J05.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J05.url", "\(c.url("/J05/f.bin"))\n  header=Range: bytes=0-10\n")
        }),
        Case(id: "J06", job: "J06.url", outcome: .failed(.invalidJob), setup: { c in
            let padding = String(repeating: "# padding to pass max_job_file_size, 64 bytes a line .........\n", count: 16_384)
            try c.drop("J06.url", "\(c.url("/J06/f.bin"))\n" + padding)
        }),
        Case(id: "J07", job: "J07.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J07.url", "colour=blue\n\(c.url("/J07/f.bin"))\n")
        }),
        Case(id: "J08", job: "J08.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J08.url", "class=nosuch\n\(c.url("/J08/f.bin"))\n")
        }),
        Case(id: "J09", job: "J09.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J09.url", "priority=99999999999999999999\n\(c.url("/J09/f.bin"))\n")
        }),
        Case(id: "J10", job: "J10.url", outcome: .failed(.invalidJob), setup: { c in
            let name = "dropfetch-escape-\(UUID().uuidString)"
            c.escapeProbes.append(URL(fileURLWithPath: c.fixture.destination + "/../../" + name).standardized.path)
            try c.drop("J10.url", "\(c.url("/J10/f.bin"))\n  out=../../\(name)\n")
        }),
        Case(id: "J11", job: "J11.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J11.url", "\(c.url("/J11/f.bin"))\n  out=../sentinel/J11.bin\n")
        }),
        Case(id: "J12", job: "J12.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J12.url", "\(c.url("/J12/f.bin"))\n  dir=../sentinel\n")
        }),
        Case(id: "J13", job: "J13.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J13.url", "\(c.url("/J13/f.bin"))\n  dir=\(c.sentinel)\n")
        }),
        Case(id: "J14", job: "J14.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J14.url", "\(c.url("/J14/f.bin"))\n  dir=sub/../../sentinel\n")
        }),
        Case(id: "J15", job: "J15.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J15.url", "\(c.url("/J15/f.bin"))\n  out=J15\u{1B}[31m\u{07}.bin\n")
        }),
        Case(id: "J16", job: "J16.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J16.url", "\(c.url("/J16/f.bin"))\n  out=\(longName("J16", bytes: 256))\n")
        }),
        Case(id: "J17", job: "J17.url", outcome: .done, files: [longName("J17", bytes: 255)], setup: { c in
            c.serve("/J17/f.bin", as: longName("J17", bytes: 255))
            try c.drop("J17.url", "\(c.url("/J17/f.bin"))\n  out=\(longName("J17", bytes: 255))\n")
        }),
        Case(id: "J18", job: "J18.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J18.url", "\(c.url("/J18/f.bin"))\n  out=.J18.bin.part\n")
        }),
        Case(id: "J19", job: "J19.url", outcome: .failed(.invalidJob), setup: { c in
            let target = try c.writeSentinel("J19-target.url", "\(c.url("/J19/f.bin"))\n")
            try FileManager.default.createSymbolicLink(atPath: c.inbox + "/J19.url", withDestinationPath: target)
        }, check: { c in
            let link = try? FileManager.default.destinationOfSymbolicLink(atPath: c.fixture.spool + "/failed/J19.url")
            #expect(link == c.sentinel + "/J19-target.url", "J19: the record is not the planted link")
        }),
        Case(id: "J20", job: "J20.url", outcome: .failed(.invalidJob), setup: { c in
            let target = try c.writeSentinel("J20-target.url", "\(c.url("/J20/f.bin"))\n")
            try FileManager.default.linkItem(atPath: target, toPath: c.inbox + "/J20.url")
        }),
        Case(id: "J21", job: "J21.url", outcome: .failed(.invalidJob), setup: { c in
            #expect(mkfifo(c.inbox + "/J21.url", 0o644) == 0)
        }, check: { c in
            #expect(Tree.type(of: c.fixture.spool + "/failed/J21.url") == S_IFIFO, "J21: the FIFO is not filed as it was")
        }),
        Case(id: "J22", job: "J22-inner.url", outcome: .done, files: ["J22.bin"], setup: { c in
            try FileManager.default.createDirectory(atPath: c.inbox + "/J22.url", withIntermediateDirectories: false)
            c.inboxLeftovers.insert("J22.url")
            c.serve("/J22/J22.bin", as: "J22.bin")
            try c.drop("J22-inner.url", "\(c.url("/J22/J22.bin"))\n", folder: "J22.url")
        }, check: { c in
            #expect(Tree.type(of: c.inbox + "/J22.url") == S_IFDIR, "J22: the folder named like a job is gone")
            #expect(!(c.fixture.jobs(in: "failed") + c.fixture.jobs(in: "done")).contains("J22.url"))
        }),
        Case(id: "J23", job: ".J23.url", outcome: .ignored, setup: { c in
            try c.drop(".J23.url", "\(c.url("/J23/f.bin"))\n")
        }),
        Case(id: "J24", job: "J24.txt", outcome: .ignored, setup: { c in
            try c.drop("J24.txt", "\(c.url("/J24/f.bin"))\n")
        }),
        Case(id: "J25", job: "J25-jobs", outcome: .ignored, setup: { c in
            try FileManager.default.createDirectory(atPath: c.sentinel + "/J25-jobs", withIntermediateDirectories: false)
            _ = try c.writeSentinel("J25-jobs/outside.url", "\(c.url("/J25/f.bin"))\n")
            try FileManager.default.createSymbolicLink(atPath: c.inbox + "/J25-jobs",
                                                       withDestinationPath: c.sentinel + "/J25-jobs")
        }),
        Case(id: "J26", job: "J26.url", outcome: .failed(.invalidJob), setup: { c in
            try FileManager.default.createDirectory(atPath: c.sentinel + "/J26-jobs", withIntermediateDirectories: false)
            _ = try c.writeSentinel("J26-jobs/outside.url", "\(c.url("/J26/f.bin"))\n")
            try FileManager.default.createSymbolicLink(atPath: c.inbox + "/J26.url",
                                                       withDestinationPath: c.sentinel + "/J26-jobs")
        }),
        Case(id: "J27", job: "J27-\u{1B}[31mred\nFAKE job done.url", outcome: .done, files: ["J27.bin"], setup: { c in
            c.serve("/J27/J27.bin", as: "J27.bin")
            try c.drop("J27-\u{1B}[31mred\nFAKE job done.url", "\(c.url("/J27/J27.bin"))\n")
        }, check: { c in
            #expect(!c.fixture.log.split(separator: "\n").contains { $0.hasPrefix("FAKE") }, "J27: a log line was forged")
        }),
        Case(id: "J28", job: "J28.url", outcome: .done, files: [longName("", bytes: 255, filler: "a")], setup: { c in
            let path = "/J28/" + String(repeating: "a", count: 16_000) + ".bin"
            c.serve(path, as: longName("", bytes: 255, filler: "a"))
            try c.drop("J28.url", c.url(path) + "\n")
        }),
        Case(id: "J29", job: "J29.url", outcome: .done, files: ["J29.bin"], setup: { c in
            c.serve("/J29/m999/J29.bin", as: "J29.bin")
            let mirrors = (0..<1000).map { c.url("/J29/m\($0)/J29.bin") }
            try c.drop("J29.url", mirrors.joined(separator: "\t") + "\n")
        }, check: { c in
            let status = try c.fixture.status("done", "J29.url")
            #expect(status.downloads.first?.url.hasSuffix("/J29/m999/J29.bin") == true, "J29: \(status.downloads)")
            #expect(c.server.requests.filter { $0.path.hasPrefix("/J29/") }.count == 1000)
        }),
        Case(id: "J30", job: "J30.url", outcome: .done, files: ["J30.bin"], setup: { c in
            c.serve("/J30/J30.bin", as: "J30.bin")
            try c.drop("J30.url", "http://[::ffff:127.0.0.1]:\(c.server.port)/J30/J30.bin\n")
        }),
        Case(id: "J31", job: "J31.url", outcome: .done, files: ["_sentinel_J31.bin"], setup: { c in
            c.serve("/J31/%2e%2e%2fsentinel%2fJ31.bin", as: "_sentinel_J31.bin")
            try c.drop("J31.url", c.url("/J31/%2e%2e%2fsentinel%2fJ31.bin") + "\n")
        }),
        Case(id: "J32", job: "J32.url", outcome: .done, files: ["J32_[31m__.bin"], setup: { c in
            c.serve("/J32/J32%1b%5b31m%07%0a.bin", as: "J32_[31m__.bin")
            try c.drop("J32.url", c.url("/J32/J32%1b%5b31m%07%0a.bin") + "\n")
        }),
        Case(id: "J33", job: "J33.url", outcome: .failed(.unsupportedProtocol), setup: { c in
            try c.drop("J33.url", "[InternetShortcut]\r\nURL=file:///etc/passwd\r\n")
        }),
        Case(id: "J34", job: "J34.url", outcome: .failed(.unsupportedProtocol), setup: { c in
            try c.drop("J34.url", "\(c.url("/J34/f.bin"))\tgopher://\(c.host)/J34/f.bin\n")
        }),
        Case(id: "J35", job: "J35.url", outcome: .done, files: ["J35.bin"], setup: { c in
            c.serve("/J35/J35.bin", as: "J35.bin")
            try c.drop("J35.url", "[InternetShortcut]\r\nURL=\(c.url("/J35/J35.bin"))\r\n[Other]\r\nURL=file:///etc/passwd\r\n")
        }),
        Case(id: "J36", job: "J36.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J36.url", "")
        }),
        Case(id: "J37", job: "J37.url", outcome: .failed(.invalidJob), setup: { c in
            try c.drop("J37.url", "class=\u{1B}[2Jurgent\n\(c.url("/J37/f.bin"))\n")
        }),
        Case(id: "J38", job: longName("J38", bytes: 255, ext: ".url"), outcome: .done, files: ["J38.bin"], setup: { c in
            c.serve("/J38/J38.bin", as: "J38.bin")
            try c.drop(longName("J38", bytes: 255, ext: ".url"), c.url("/J38/J38.bin") + "\n")
        }, check: { c in
            let record = record(of: longName("J38", bytes: 255, ext: ".url"), in: "done", c)
            #expect(record.hasPrefix("J38xxx") && record.hasSuffix(".url") && record.utf8.count <= 255, "J38: \(record)")
        }),
    ]

    /// `prefix` padded with `filler` and ended by `ext` to exactly `bytes` UTF-8 bytes.
    static func longName(_ prefix: String, bytes: Int, filler: Character = "x", ext: String = ".bin") -> String {
        prefix + String(repeating: filler, count: bytes - prefix.utf8.count - ext.utf8.count) + ext
    }

    // MARK: - Planted in the destination (P)

    static let plantedCases: [Case] = [
        Case(id: "P01", job: "P01.url", outcome: .done, files: ["P01.bin"], setup: { c in
            c.serve("/P01/P01.bin", as: "P01.bin")
            let target = try c.writeSentinel("P01-part-target", "precious\n")
            try c.plantSymlink(".P01.bin.part", to: target)
            try c.drop("P01.url", c.url("/P01/P01.bin") + "\n")
        }),
        Case(id: "P02", job: "P02.url", outcome: .done, files: ["P02.bin", "P02.1.bin"], setup: { c in
            c.serve("/P02/P02.bin", as: "P02.1.bin")
            let target = try c.writeSentinel("P02-final-target", "precious\n")
            try c.plantSymlink("P02.bin", to: target)
            try c.drop("P02.url", c.url("/P02/P02.bin") + "\n")
        }, check: { c in
            let link = try? FileManager.default.destinationOfSymbolicLink(atPath: c.fixture.destination + "/P02.bin")
            #expect(link == c.sentinel + "/P02-final-target", "P02: the planted link was replaced")
            let status = try c.fixture.status("done", "P02.url")
            #expect(status.downloads.first?.file == c.fixture.destination + "/P02.1.bin")
        }),
        Case(id: "P03", job: "P03.url", outcome: .done, files: ["P03.bin"], setup: { c in
            c.serve("/P03/P03.bin", as: "P03.bin")
            let target = try c.writeSentinel("P03-hard-target", "precious\n")
            try c.makeDestination()
            try FileManager.default.linkItem(atPath: target, toPath: c.fixture.destination + "/.P03.bin.part")
            try c.drop("P03.url", c.url("/P03/P03.bin") + "\n")
        }, check: { c in
            #expect(Tree.linkCount(c.sentinel + "/P03-hard-target") == 1, "P03: the planted hard link is still there")
        }),
        Case(id: "P04", job: "P04.url", outcome: .done, files: ["P04.bin"], setup: { c in
            c.serve("/P04/P04.bin", as: "P04.bin")
            try c.makeDestination()
            #expect(mkfifo(c.fixture.destination + "/.P04.bin.part", 0o644) == 0)
            try c.drop("P04.url", c.url("/P04/P04.bin") + "\n")
        }),
        Case(id: "P05", job: "P05.url", outcome: .done, files: ["P05.bin"], setup: { c in
            c.serve("/P05/P05.bin", as: "P05.bin", size: 1_500_000)
            let target = try c.writeSentinel("P05-record-target", "{\"precious\": true}\n")
            try c.plantSymlink(".P05.bin.part.json", to: target)
            try c.drop("P05.url", c.url("/P05/P05.bin") + "\n")
        }),
        Case(id: "P06", job: "P06.url", outcome: .failed(.invalidJob), files: ["P06"], setup: { c in
            try c.plantSymlink("P06", to: c.sentinel)
            c.serve("/P06/P06.bin", as: nil)
            try c.drop("P06.url", "\(c.url("/P06/P06.bin"))\n  dir=P06\n")
        }),
        Case(id: "P07", job: "P07.url", outcome: .failed(.invalidJob), files: ["P07"], setup: { c in
            try c.plantSymlink("P07", to: c.sentinel)
            c.serve("/P07/P07.bin", as: nil)
            try c.drop("P07.url", "\(c.url("/P07/P07.bin"))\n  dir=P07/sub\n")
        }),
        Case(id: "P08", job: "P08.url", outcome: .done, files: ["P08.bin", "P08.1.bin"], setup: { c in
            c.serve("/P08/P08.bin", as: "P08.1.bin")
            try FileManager.default.createDirectory(atPath: c.fixture.destination + "/P08.bin", withIntermediateDirectories: true)
            try c.drop("P08.url", c.url("/P08/P08.bin") + "\n")
        }),
        Case(id: "P09", job: "P09.url", outcome: .done, files: ["P09.bin"], setup: { c in
            c.serve("/P09/P09.bin", as: "P09.bin")
            try c.makeDestination()
            try Data(repeating: 0x41, count: 700).write(to: URL(fileURLWithPath: c.fixture.destination + "/.P09.bin.part"))
            try c.drop("P09.url", c.url("/P09/P09.bin") + "\n")
        }),
        Case(id: "P10", job: "P10.url", outcome: .done,
             files: [longName("P10", bytes: 255), longName("P10", bytes: 255, ext: ".1.bin")], setup: { c in
            try c.makeDestination()
            let taken = Array("taken\n".utf8)
            try Data(taken).write(to: URL(fileURLWithPath: c.fixture.destination + "/" + longName("P10", bytes: 255)))
            c.bodies[longName("P10", bytes: 255)] = taken
            c.serve("/P10/f.bin", as: longName("P10", bytes: 255, ext: ".1.bin"))
            try c.drop("P10.url", "\(c.url("/P10/f.bin"))\n  out=\(longName("P10", bytes: 255))\n")
        }),
    ]
}

// MARK: - The harness

extension HostileInputTests {
    /// What a case expects of its job once the run is over.
    enum Outcome: Sendable, Equatable {
        case done
        case failed(ErrorKind)
        /// Not a job (docs/spool.md): it stays in the inbox as it was.
        case ignored
    }

    /// One row of docs/hostile-inputs.md: what is dropped, planted or served, and where it must end up.
    struct Case: Sendable {
        let id: String
        /// The job's name as dropped (the status file's `job`; its record is found by it, docs/status-files.md);
        /// for `.ignored`, the entry's path under the inbox.
        let job: String
        let outcome: Outcome
        /// Paths under the destination the case leaves: data files, kept partial data, planted entries.
        var files: [String] = []
        let setup: @Sendable (Context) throws -> Void
        var check: @Sendable (Context) throws -> Void = { _ in }
    }

    /// The fixture, servers and bookkeeping that one group of cases shares during one `run --once`.
    final class Context {
        let fixture: SpoolFixture
        let server: TestHTTPServer
        /// What each data file must hold, by path under the destination.
        var bodies: [String: [UInt8]] = [:]
        /// Job files as dropped, by path under the inbox: records must keep them byte for byte.
        var dropped: [String: [UInt8]] = [:]
        /// Paths outside the fixture that an escape would create.
        var escapeProbes: [String] = []
        /// Inbox entries that belong to no case's job and stay (the folder named like a job).
        var inboxLeftovers: Set<String> = []
        /// Words that may appear in no file but the job files that carry them.
        var secrets: [String] = []
        /// Servers that must live until the checks are over.
        var retained: [AnyObject] = []
        private var nextSeed: UInt64 = 1

        init(fixture: SpoolFixture, server: TestHTTPServer) {
            self.fixture = fixture
            self.server = server
        }

        var host: String { "\(server.host):\(server.port)" }
        var inbox: String { fixture.spool + "/inbox" }
        var sentinel: String { fixture.root.path + "/sentinel" }

        func url(_ path: String) -> String { server.url(path) }

        /// Serves fresh bytes at `path`; `name` is the destination file they must end up as (nil: none).
        @discardableResult
        func serve(_ path: String, as name: String?, size: Int = 3_000, on other: TestHTTPServer? = nil,
                   faults: [TestHTTPServer.Fault] = []) -> [UInt8] {
            nextSeed += 1
            let body = TestHTTPServer.randomBytes(size, seed: 0xBAD_5EED + nextSeed)
            (other ?? server).serve(path, body: body, faults: faults)
            if let name { bodies[name] = body }
            return body
        }

        func drop(_ name: String, _ text: String, folder: String = "") throws {
            try dropBytes(name, Array(text.utf8), folder: folder)
        }

        /// Writes a dot temp file and renames it into the inbox, as a careful writer does.
        func dropBytes(_ name: String, _ bytes: [UInt8], folder: String = "") throws {
            let directory = folder.isEmpty ? inbox : inbox + "/" + folder
            let temp = directory + "/.\(UUID().uuidString).tmp"
            try Data(bytes).write(to: URL(fileURLWithPath: temp))
            try FileManager.default.moveItem(atPath: temp, toPath: directory + "/" + name)
            dropped[folder.isEmpty ? name : folder + "/" + name] = bytes
        }

        /// Creates a file in the sentinel folder (beside the destination) and returns its path.
        func writeSentinel(_ relative: String, _ text: String) throws -> String {
            let path = sentinel + "/" + relative
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }

        func makeDestination() throws {
            try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        }

        /// Plants `destination/name` as a symbolic link to `target`.
        func plantSymlink(_ name: String, to target: String) throws {
            try makeDestination()
            try FileManager.default.createSymbolicLink(atPath: fixture.destination + "/" + name, withDestinationPath: target)
        }

        /// A second host: a test server on 127.0.0.2, created once.
        func otherServer() throws -> TestHTTPServer {
            if let existing = retained.lazy.compactMap({ $0 as? TestHTTPServer }).first { return existing }
            let other = try TestHTTPServer(host: "127.0.0.2")
            retained.append(other)
            return other
        }
    }

    /// Sets every case up, drops a good job, runs `dropfetch run --once`, then checks each case and
    /// everything the run left on disk. With `goodJob: false` the caller runs the good job itself.
    @discardableResult
    static func run(_ cases: [Case], config: String = "", goodJob: Bool = true) throws -> Context {
        let fixture = try SpoolFixture(extraConfig: config)
        let context = Context(fixture: fixture, server: try TestHTTPServer())
        try FileManager.default.createDirectory(atPath: context.sentinel, withIntermediateDirectories: false)
        _ = try context.writeSentinel("canary.txt", "nothing may write here\n")
        for item in cases { try item.setup(context) }
        var all = cases
        if goodJob {
            all.append(Case(id: "good", job: "good.url", outcome: .done, files: ["good.bin"], setup: { c in
                c.serve("/good/good.bin", as: "good.bin")
                try c.drop("good.url", c.url("/good/good.bin") + "\n")
            }))
            try all.last!.setup(context)
        }
        let sentinelBefore = Tree.walk(context.sentinel)
        let anyFailure = cases.contains { if case .failed = $0.outcome { true } else { false } }

        #expect(try fixture.runOnce(timeout: 120) == (anyFailure ? 1 : 0))

        for item in all { try verify(item, in: context) }
        verifyNothingEscaped(all, sentinelBefore: sentinelBefore, in: context)
        return context
    }

    /// The checks one case owns: its folder, status and `error.kind`, its files, its record.
    static func verify(_ item: Case, in c: Context) throws {
        let label = "\(item.id) \(item.job.debugDescription)"
        let done = c.fixture.jobs(in: "done").compactMap { jobName(ofRecord: $0, in: "done", c) }
        let failed = c.fixture.jobs(in: "failed").compactMap { jobName(ofRecord: $0, in: "failed", c) }
        switch item.outcome {
        case .done:
            let why = (try? c.fixture.status("failed", record(of: item.job, in: "failed", c)))?.error?.description ?? ""
            #expect(done.contains(item.job) && !failed.contains(item.job), "\(label): not in done/ (and only there) \(why)")
            if let status = try? c.fixture.status("done", record(of: item.job, in: "done", c)) {
                #expect(status.state == .done && status.error == nil, "\(label): \(status.error?.description ?? "")")
                #expect(status.job == item.job, "\(label): status names \(status.job.debugDescription)")
                #expect(status.downloads.allSatisfy { $0.state == .done }, "\(label): \(status.downloads)")
            } else {
                Issue.record("\(label): no readable status file in done/")
            }
        case .failed(let kind):
            #expect(failed.contains(item.job) && !done.contains(item.job), "\(label): not in failed/ (and only there)")
            if let status = try? c.fixture.status("failed", record(of: item.job, in: "failed", c)) {
                #expect(status.state == .failed, "\(label): state \(status.state)")
                #expect(status.error?.kind == kind, "\(label): \(status.error?.description ?? "no error")")
                #expect(status.job == item.job, "\(label): status names \(status.job.debugDescription)")
            } else {
                Issue.record("\(label): no readable status file in failed/")
            }
        case .ignored:
            #expect(Tree.type(of: c.inbox + "/" + item.job) != nil, "\(label): no longer in the inbox")
            #expect(!done.contains(item.job) && !failed.contains(item.job), "\(label): was filed")
        }
        // The record (or the ignored entry) is the user's file, byte for byte.
        if let (path, bytes) = c.dropped.first(where: { ($0.key as NSString).lastPathComponent == item.job }) {
            let kept: String = switch item.outcome {
            case .done: c.fixture.spool + "/done/" + record(of: item.job, in: "done", c)
            case .failed: c.fixture.spool + "/failed/" + record(of: item.job, in: "failed", c)
            case .ignored: c.inbox + "/" + path
            }
            let unchanged = FileManager.default.contents(atPath: kept).map(Array.init) == bytes
            #expect(unchanged, "\(label): the job file changed or is gone")
        }
        for file in item.files {
            let path = c.fixture.destination + "/" + file
            if let body = c.bodies[file] {
                #expect(Tree.type(of: path) == S_IFREG, "\(label): \(file) is not a regular file")
                #expect(c.fixture.downloaded(file).map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body),
                        "\(label): \(file) is not what the server sent")
            } else {
                #expect(Tree.type(of: path) != nil, "\(label): \(file) is missing")
            }
        }
        let fetchesNothing = switch item.outcome {
        case .ignored, .failed(.invalidJob), .failed(.unsupportedProtocol): true
        default: false
        }
        if fetchesNothing {
            #expect(c.server.requests.allSatisfy { !$0.path.hasPrefix("/\(item.id)/") }, "\(label): something was fetched")
        }
        try item.check(c)
    }

    /// The name of the record in `folder` whose status file names `job` (docs/status-files.md: the record
    /// may be filed under another name, such as `x.1.url`); `job` itself when there is none.
    static func record(of job: String, in folder: String, _ c: Context) -> String {
        c.fixture.jobs(in: folder).first { jobName(ofRecord: $0, in: folder, c) == job } ?? job
    }

    /// The `job` field of the status file beside record `name` in `folder`.
    static func jobName(ofRecord name: String, in folder: String, _ c: Context) -> String? {
        (try? c.fixture.status(folder, name))?.job
    }

    /// Invariant 4 over the whole run: the fixture holds nothing but what the cases expect, the
    /// sentinel is as it was, no escape probe exists, the log is free of raw control characters,
    /// and no secret is in any file but the job file that carried it.
    static func verifyNothingEscaped(_ cases: [Case], sentinelBefore: [String: Tree.Entry], in c: Context) {
        let f = c.fixture
        #expect(Tree.names(f.root.path) == ["agent.log", "config.yaml", "downloads", "sentinel", "spool"])
        // Besides the folders, the agent's filing journal and done index (FilingJournal, DoneIndex).
        #expect(Tree.names(f.spool).filter { !$0.hasPrefix(".filings.") && !$0.hasPrefix(".done-urls.") }
                == ["done", "failed", "hold", "inbox", "work"])
        #expect(Tree.names(f.spool).filter { $0.hasPrefix(".") }.allSatisfy { $0 == ".filings.test-agent" || $0 == ".done-urls.test-agent" })
        #expect(Tree.names(f.spool + "/hold").isEmpty)
        #expect(Tree.names(f.spool + "/work") == ["test-agent"])
        #expect(Tree.names(f.spool + "/work/test-agent") == [".lease", ".lock"])
        for folder in ["done", "failed"] {
            let jobs = cases.filter {
                switch $0.outcome {
                case .done: folder == "done"
                case .failed: folder == "failed"
                case .ignored: false
                }
            }.map { record(of: $0.job, in: folder, c) }
            let expected = jobs + jobs.map { String($0.dropLast(4)) + ".status.json" }
            #expect(Tree.names(f.spool + "/" + folder) == expected.sorted(), "\(folder)/ holds more or less than the records")
        }
        let ignored = cases.filter { $0.outcome == .ignored }.map(\.job)
        #expect(Set(Tree.walk(c.inbox).keys) == c.inboxLeftovers.union(ignored), "the inbox")
        var expectedFiles: Set<String> = []
        for file in cases.flatMap(\.files) {
            var path = file
            while !path.isEmpty {
                expectedFiles.insert(path)
                path = (path as NSString).deletingLastPathComponent
            }
        }
        let found = Set(Tree.walk(f.destination).keys)
        #expect(found == expectedFiles, """
            destination: unexpected \(found.subtracting(expectedFiles).sorted()), \
            missing \(expectedFiles.subtracting(found).sorted())
            """)
        let changed = Tree.changes(from: sentinelBefore, to: Tree.walk(c.sentinel))
        #expect(changed.isEmpty, "the sentinel folder beside the destination changed: \(changed)")
        for probe in c.escapeProbes { #expect(Tree.type(of: probe) == nil, "escaped to \(probe)") }

        let log = FileManager.default.contents(atPath: f.logPath).map(Array.init) ?? []
        if let offset = Tree.firstControlByte(in: log) {
            let context = String(decoding: log[max(0, offset - 60)..<min(log.count, offset + 20)], as: UTF8.self)
            Issue.record("raw control character in the log: \(context.debugDescription)")
        }
        let records = Set(c.dropped.values)
        for (path, entry) in Tree.walk(f.root.path) where entry.type == S_IFREG {
            guard let bytes = FileManager.default.contents(atPath: f.root.path + "/" + path) else { continue }
            let isJobFile = (path.hasPrefix("spool/done/") || path.hasPrefix("spool/failed/")) && records.contains(Array(bytes))
            guard !isJobFile else { continue }
            for secret in c.secrets where bytes.range(of: Data(secret.utf8)) != nil {
                Issue.record("'\(secret)' is in \(path)")
            }
        }
    }

    /// A recursive lstat(2) listing that never follows symbolic links, to compare folders before and after.
    enum Tree {
        struct Entry: Equatable {
            var type: mode_t
            var mode: mode_t
            var size: Int64
            var modified: Int64
            var sha256: String?
            var link: String?
        }

        static func type(of path: String) -> mode_t? {
            var info = stat()
            return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
        }

        static func linkCount(_ path: String) -> Int? {
            var info = stat()
            return lstat(path, &info) == 0 ? Int(info.st_nlink) : nil
        }

        static func mode(of path: String) -> mode_t? {
            var info = stat()
            return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
        }

        /// The names in a folder, hidden ones included, sorted.
        static func names(_ path: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
        }

        /// Every entry below `root` by relative path; FIFOs are listed, never opened.
        static func walk(_ root: String) -> [String: Entry] {
            var result: [String: Entry] = [:]
            var pending = [""]
            while let relative = pending.popLast() {
                for name in names(relative.isEmpty ? root : root + "/" + relative) {
                    let path = relative.isEmpty ? name : relative + "/" + name
                    let full = root + "/" + path
                    var info = stat()
                    guard lstat(full, &info) == 0 else { continue }
                    let type = info.st_mode & S_IFMT
                    var entry = Entry(type: type, mode: info.st_mode & 0o7777, size: Int64(info.st_size),
                                      modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
                    switch type {
                    case S_IFDIR: pending.append(path)
                    case S_IFREG:
                        entry.sha256 = FileManager.default.contents(atPath: full).map { TestHTTPServer.sha256Hex(Array($0)) }
                    case S_IFLNK: entry.link = try? FileManager.default.destinationOfSymbolicLink(atPath: full)
                    default: break
                    }
                    result[path] = entry
                }
            }
            return result
        }

        /// The paths whose entries differ between two walks, added and removed ones included.
        static func changes(from before: [String: Entry], to after: [String: Entry]) -> [String] {
            Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
        }

        /// The offset of the first C0 control other than LF, DEL or UTF-8-encoded C1 control in `bytes`.
        static func firstControlByte(in bytes: [UInt8]) -> Int? {
            for (offset, byte) in bytes.enumerated() {
                if (byte < 0x20 && byte != 0x0A) || byte == 0x7F { return offset }
                if byte == 0xC2, offset + 1 < bytes.count, (0x80...0x9F).contains(bytes[offset + 1]) { return offset }
            }
            return nil
        }
    }
}
