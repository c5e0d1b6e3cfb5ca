import DropFetch
import Foundation
import Testing

/// `dropfetch add` names jobs a person can type and checks them as `run` would; control commands
/// take that name, the job file's name or a unique prefix; shell completion lists the names
/// (issue 25, items 2 and 5).
@Suite("Job names and add, end to end")
struct JobNamingTests {
    @Test("add prints short names (file.iso.url, then file.iso.1.url), unique across the spool; control takes a prefix")
    func shortNamesAndPrefixes() throws {
        let fixture = try SpoolFixture()
        try FileManager.default.createDirectory(atPath: fixture.spool + "/hold", withIntermediateDirectories: true)
        // A finished job of the same name: the new one must not take it, or `retry file.iso` is ambiguous.
        try "http://127.0.0.1:1/file.iso\n".write(toFile: fixture.spool + "/done/file.iso.url", atomically: false, encoding: .utf8)
        let first = try fixture.capture(["add", "http://127.0.0.1:1/pub/file.iso"])
        #expect(first.ending == .exited(0), "\(first.stderr)")
        #expect(first.stdout == "file.iso.1.url\n")
        let both = try fixture.capture(["add", "http://127.0.0.1:1/a/file.iso", "http://127.0.0.1:1/other.bin"])
        #expect(both.stdout == "file.iso.2.url\nother.bin.url\n", "one job per URL without --mirrors: \(both.stderr)")
        #expect(fixture.jobs(in: "inbox") == ["file.iso.1.url", "file.iso.2.url", "other.bin.url"])

        let exact = try fixture.capture(["hold", "other.bin"])
        #expect(exact.ending == .exited(0), "\(exact.stderr)")
        let prefix = try fixture.capture(["hold", "file.iso.2"])
        #expect(prefix.ending == .exited(0), "\(prefix.stderr)")
        #expect(fixture.jobs(in: "hold") == ["file.iso.2.url", "other.bin.url"])
        let unique = try fixture.capture(["release", "oth"])
        #expect(unique.ending == .exited(0), "a unique prefix names the job: \(unique.stderr)")
        #expect(fixture.jobs(in: "hold") == ["file.iso.2.url"])

        let ambiguous = try fixture.capture(["cancel", "file"])
        #expect(ambiguous.ending == .exited(1))
        #expect(ambiguous.stderr.contains("file.iso.1") && ambiguous.stderr.contains("file.iso.2"), "\(ambiguous.stderr)")
        #expect(fixture.jobs(in: "failed").isEmpty, "an ambiguous name moves nothing")

        // Completion calls back into the binary (the bash, zsh and fish scripts all do).
        let completion = try fixture.capture(["---completion", "hold", "--", "positional@0", "3", "0",
                                              "dropfetch", "hold", "--config", fixture.configPath, ""])
        #expect(completion.ending == .exited(0), "\(completion.stderr)")
        #expect(completion.stdout.split(separator: "\n").sorted() == ["file.iso.1", "other.bin"], "\(completion.stdout)")
        for shell in ["bash", "zsh", "fish"] {
            let script = try fixture.capture(["--generate-completion-script", shell])
            #expect(script.stdout.contains("---completion hold"), "\(shell) completes job names")
        }
    }

    @Test("add refuses what run would refuse: exit 2, nothing written, errors in terms of the command line",
          arguments: [
              (["--class", "nosuch", "http://127.0.0.1:1/a.bin"], "--class"),
              (["file:///etc/passwd"], "scheme 'file'"),
              (["ftp://127.0.0.1:1/a.bin"], "scheme 'ftp'"),
              (["http://127.0.0.1:1/a.bin", "--header", "Range: bytes=1-"], "--header 'Range: bytes=1-'"),
              (["http://127.0.0.1:1/a.bin", "--checksum", "sha-256=zz"], "--checksum sha-256=zz"),
              (["http://127.0.0.1:1/a.bin", "--dir", "../up"], "--dir ../up"),
              (["http://127.0.0.1:1/a.bin", "http://127.0.0.1:1/b.bin", "--out", "x.bin"], "--mirrors"),
          ])
    func refusals(arguments: [String], mentions: String) throws {
        let fixture = try SpoolFixture()
        try fixture.writeConfig("classes:\n  - { name: iso, priority: 1 }\n")
        let result = try fixture.capture(["add"] + arguments)
        #expect(result.ending == .exited(2), "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains(mentions), "\(result.stderr)")
        #expect(!result.stderr.contains("line "), "no line of a file the user never saw: \(result.stderr)")
        #expect(fixture.names(in: "inbox").isEmpty)
    }

    @Test("add on a spool not made yet makes it as run would (modes), writes the job, and run --once takes it")
    func newSpool() throws {
        let server = try TestHTTPServer()
        server.serve("/a.bin", body: Array("fresh".utf8))
        let fixture = try SpoolFixture()
        let fresh = fixture.root.path + "/fresh"
        let config = fixture.root.path + "/fresh.yaml"
        try "spool: \(fresh)\ndestination: \(fresh)/downloads\nagent_id: fresh\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let added = try fixture.capture(["add", "http://127.0.0.1:\(server.port)/a.bin"], config: config)
        #expect(added.ending == .exited(0), "\(added.stderr)")
        #expect(added.stdout == "a.bin.url\n")
        // The umask the agent inherits, read without setting it (umask(2) would race other tests).
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let umaskLine = status.split(separator: "\n").first { $0.hasPrefix("Umask:") } ?? "Umask: 0022"
        let umask = Int(umaskLine.split(separator: "\t").last.map(String.init) ?? "22", radix: 8) ?? 0o022
        for folder in ["", "/inbox", "/hold", "/done", "/failed", "/work"] {
            let mode = (try FileManager.default.attributesOfItem(atPath: fresh + folder)[.posixPermissions] as? Int) ?? -1
            #expect(mode == 0o775 & ~umask, "\(fresh + folder): \(String(mode, radix: 8))")
        }
        #expect(FileManager.default.fileExists(atPath: fresh + "/inbox/a.bin.url"))
        let once = try fixture.capture(["run", "--once"], config: config)
        #expect(once.ending == .exited(0), "\(once.stderr)")
        #expect(FileManager.default.contents(atPath: fresh + "/downloads/a.bin") == Data("fresh".utf8))
    }

    @Test("add on a spool whose parent folder is missing: exit 3, nothing created")
    func missingSpool() throws {
        let fixture = try SpoolFixture()
        let elsewhere = fixture.root.path + "/nowhere/spool"
        let config = fixture.root.path + "/nowhere.yaml"
        try "spool: \(elsewhere)\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try fixture.capture(["add", "http://127.0.0.1:1/a.bin"], config: config)
        #expect(result.ending == .exited(3), "\(result.stderr)")
        #expect(result.stderr.contains("no spool at \(elsewhere), and it cannot be created: its parent folder"),
                "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: fixture.root.path + "/nowhere"))
    }

    @Test("add --dir, --checksum, --header, --limit reach the download; --class is taken")
    func options() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(20_000, seed: 2_501)
        server.serve("/o.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.writeConfig("classes:\n  - { name: iso, priority: 7 }\n")
        let added = try fixture.capture(["add", server.url("/o.bin"), "--class", "iso", "--dir", "sub",
                                         "--checksum", "sha-256=" + TestHTTPServer.sha256Hex(body),
                                         "--header", "X-Token: abc", "--limit", "1M"])
        #expect(added.ending == .exited(0), "\(added.stderr)")
        #expect(added.stdout == "o.bin.url\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.logTail())")
        let status = try fixture.status("done", "o.bin.url")
        #expect(status.className == "iso")
        #expect(status.priority == 7)
        #expect(FileManager.default.contents(atPath: fixture.destination + "/sub/o.bin").map { Array($0) } == body)
        #expect(server.completedRequests().first?.headers.contains { $0.0.lowercased() == "x-token" && $0.1 == "abc" } == true)
    }
}
