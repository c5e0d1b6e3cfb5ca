import Foundation
import Glibc
import Testing

/// Issue 24, the inbox writer (docs/security.md): a local user who may write only the inbox plants
/// files beside a job or in place of a routing folder. Nothing read from the inbox decides a path,
/// a result or a hook's input, nothing there blocks the agent, and nothing outside it is read.
@Suite("An inbox writer cannot forge state, hang the agent or reach outside the inbox, end to end", .serialized)
struct UntrustedInboxTests {
    /// A released job's state file as an attacker would plant it: a name out of the spool, a
    /// finished download of a file the attacker wants a hook to act on, and odd numbers.
    private static let forgedState = """
        {"schema":1,"job":"../../agenthome/x.url","state":"done","class":"default","priority":0,"agent":"h",
         "submitted":"9999-12-31T23:59:59Z","started":null,"finished":null,"attempts":-7,
         "downloads":[{"url":"https://e.example/a","file":"/tmp/secret\\n/etc/shadow","state":"done","bytes":1,
         "http_status":200,"resumed_from":0,"sha256":null,"seconds":0,"error":null}],"error":null}
        """

    @Test("case 1: a planted .a.state.json names nothing: the job is a.url, fetched, filed done/a.url; hooks see a.url and its real file")
    func forgedReleasedState() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(4_000, seed: 24_001)
        server.serve("/a.bin", body: body)
        let fixture = try SpoolFixture()
        let agentHome = fixture.root.path + "/agenthome"
        let record = fixture.root.path + "/hooks"
        for folder in [agentHome, record] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        let script = record + "/hook.sh"
        try #"env | grep '^DROPFETCH_' | sort > "$1/done.env""#.write(toFile: script, atomically: false, encoding: .utf8)
        try fixture.writeConfig("hooks:\n  on_done: [/bin/sh, \(script), \(record)]\n")
        try Self.forgedState.write(toFile: fixture.spool + "/inbox/.a.state.json", atomically: false, encoding: .utf8)
        try fixture.drop("a.url", server.url("/a.bin") + "\n")

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")

        #expect(try FileManager.default.contentsOfDirectory(atPath: agentHome).isEmpty, "the planted job path was created")
        #expect(fixture.jobs(in: "done") == ["a.url"], "done/: \(fixture.names(in: "done"))\n\(fixture.log)")
        #expect(server.requests(to: "/a.bin").count == 1, "filed done without a request")
        #expect(fixture.downloaded("a.bin") == body)
        let status = fixture.statusObject("done", "a.url")
        #expect(status?["job"] as? String == "a.url")
        #expect(StatusFields.int(status?["attempts"]) == 1, "a negative attempt count is clamped to 0: \(status ?? [:])")
        #expect(StatusFields.firstDownload(status)["file"] as? String == fixture.destination + "/a.bin")
        #expect(!fixture.names(in: "inbox").contains(".a.state.json"), "the sidecar is taken up and removed")
        let hook = try String(contentsOfFile: record + "/done.env", encoding: .utf8)
        #expect(hook.contains("DROPFETCH_JOB=a.url\n"), "\(hook)")
        #expect(hook.contains("DROPFETCH_FILES=\(fixture.destination)/a.bin\n") && !hook.contains("shadow"), "\(hook)")
    }

    @Test("case 2: a FIFO planted as .x.state.json: run --once claims x.url and exits; a daemon keeps claiming and stops on SIGTERM")
    func plantedFIFO() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(3_000, seed: 24_002)
        server.serve("/x.bin", body: body)
        server.serve("/y.bin", body: body)
        let fixture = try SpoolFixture()
        let fifo = fixture.spool + "/inbox/.x.state.json"
        #expect(mkfifo(fifo, 0o666) == 0)
        try fixture.drop("x.url", server.url("/x.bin") + "\n")

        // A run that hung in open(2) would be killed at the timeout and throw here.
        #expect(try fixture.runOnce(timeout: 30) == 0, "\(fixture.log)")
        #expect(fixture.jobs(in: "done") == ["x.url"])

        try fixture.drop("y.url", server.url("/y.bin") + "\n")
        #expect(mkfifo(fixture.spool + "/inbox/.y.state.json", 0o666) == 0)
        try fixture.startDaemon()
        #expect(try waitUntil { fixture.jobs(in: "done") == ["x.url", "y.url"] }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0, "SIGTERM was not handled")
    }

    @Test("case 4: inbox/sub moved away and replaced by a symlink after it is watched: VICTIM/secret.url is not claimed, moved or logged")
    func routingFolderSwap() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(2_000, seed: 24_004)
        server.serve("/probe.bin", body: body)
        let fixture = try SpoolFixture()
        let victim = fixture.root.path + "/victim"
        try FileManager.default.createDirectory(atPath: victim, withIntermediateDirectories: true)
        let secret = "SECRET-LINE-\(UUID().uuidString)\n"
        try secret.write(toFile: victim + "/secret.url", atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: fixture.spool + "/inbox/sub", withIntermediateDirectories: true)
        try fixture.startDaemon()
        // The agent is up and watching inbox/sub once a job dropped there is done.
        try fixture.drop("first.url", server.url("/probe.bin") + "\n", folder: "sub")
        #expect(try waitUntil { fixture.jobs(in: "done") == ["first.url"] }, "\(fixture.log)")

        let moved = fixture.root.path + "/moved"
        #expect(rename(fixture.spool + "/inbox/sub", moved) == 0)
        #expect(symlink(victim, fixture.spool + "/inbox/sub") == 0)
        // Written and closed in the moved folder: its watch reports `sub/secret.url`.
        try "https://unused.invalid/\n".write(toFile: moved + "/secret.url", atomically: false, encoding: .utf8)
        try fixture.drop("probe.url", server.url("/probe.bin") + "\n")
        #expect(try waitUntil { fixture.jobs(in: "done").contains("probe.url") }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)

        #expect(try String(contentsOfFile: victim + "/secret.url", encoding: .utf8) == secret, "the victim's file moved or changed")
        #expect(!fixture.jobs(in: "failed").contains("secret.url") && !fixture.jobs(in: "done").contains("secret.url"))
        #expect(!fixture.log.contains("SECRET-LINE"), "\(fixture.log)")
        #expect(fixture.names(in: "work/test-agent").filter { $0 != ".lock" && $0 != ".lease" }.isEmpty)
    }

    @Test("case 8: run --once at ulimit -n 12 to 34 never exits 0 with jobs left and files none as invalid_job; below 32 it says so and claims nothing; a run with descriptors does them all")
    func outOfDescriptors() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(2_000, seed: 24_008)
        server.serve("/f.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "once_wait: 2s\n")
        for index in 0..<30 { try fixture.drop("j\(index).url", server.url("/f.bin") + "\n") }
        // Below 32 (`DescriptorLimit.minimum`) the agent refuses to run and claims nothing (75);
        // from there claims and filings that find no descriptor wait and are tried again.
        for limit in 12...34 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(limit) && exec \"$0\" run --once --config \"$1\" 2>>\"$2\"",
                                 SpoolFixture.binary, fixture.configPath, fixture.logPath]
            try process.runSerially()
            #expect(try waitUntil(timeout: .seconds(60)) { !process.isRunning })
            process.waitUntilExit()
            let left = fixture.jobs(in: "inbox").count + fixture.names(in: "work/test-agent").filter { $0.hasSuffix(".url") }.count
            if left > 0 {
                #expect([3, 75].contains(process.terminationStatus), "ulimit -n \(limit): \(left) jobs left, exit \(process.terminationStatus)\n\(fixture.logTail())")
            }
            let invalid = try fixture.jobs(in: "failed").filter { try fixture.status("failed", $0).error?.kind == .invalidJob }
            #expect(invalid.isEmpty, "ulimit -n \(limit): filed as invalid_job for want of descriptors: \(invalid)")
            if limit < 32 {
                #expect(process.terminationStatus == 75 && left == 30, "ulimit -n \(limit): exit \(process.terminationStatus), \(left) left")
                #expect(fixture.log.contains("too few file descriptors to run") && fixture.log.contains("limit=\(limit)"), "\(fixture.logTail())")
            }
        }

        // A download cut short for want of a socket may have failed for good (kind `network`): not `invalid_job`.
        #expect([0, 1].contains(try fixture.runOnce()), "\(fixture.logTail())")
        #expect(fixture.jobs(in: "done").count + fixture.jobs(in: "failed").count == 30 && fixture.jobs(in: "inbox").isEmpty,
                "done: \(fixture.jobs(in: "done").count), failed: \(fixture.jobs(in: "failed"))")
        #expect(try fixture.jobs(in: "failed").allSatisfy { try fixture.status("failed", $0).error?.kind != .invalidJob })
    }

    @Test("case 8: a job 17 routing folders deep is reported in the log, not silently ignored; 16 deep is done")
    func tooDeep() throws {
        let server = try TestHTTPServer()
        server.serve("/d.bin", body: TestHTTPServer.randomBytes(1_000, seed: 24_017))
        let fixture = try SpoolFixture()
        let sixteen = (1...16).map { "d\($0)" }.joined(separator: "/")
        try fixture.drop("deep.url", server.url("/d.bin") + "\n", folder: sixteen)
        try fixture.drop("deeper.url", server.url("/d.bin") + "\n", folder: sixteen + "/d17")

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.jobs(in: "done") == ["deep.url"])
        #expect(fixture.log.contains("routing folder is more than 16 folders deep"), "\(fixture.log)")
        #expect(fixture.log.contains("d16/d17"))
    }
}
