import Foundation
import Glibc
import Testing

/// Issue 35, items 8, 9 and 10: the status page under the unit's `UMask=0007`, with its folder
/// swapped for a symlink, and with a bidi override in a job's name (docs/status-page.md).
@Suite("Status page under attack")
struct StatusPageAttackTests {
    /// The permission bits of `path`, not following a symlink.
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    /// `dropfetch ARGUMENTS --config CONFIG` run to its end by a shell that first sets `umask 0007`, as the unit does.
    static func runUnderUmask(_ arguments: [String], _ fixture: SpoolFixture, config: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "umask 0007 && exec \"$0\" \"$@\"", SpoolFixture.binary] + arguments + ["--config", config]
        let log = FileHandle(forUpdatingAtPath: fixture.logPath) ?? FileHandle.standardError
        log.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        try process.runSerially()
        #expect(try waitUntil(timeout: .seconds(60)) { !process.isRunning })
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test("under umask 0007 the page and status.json are 0644, as a web server in another group needs")
    func pageModesUnderUmask() throws {
        let fixture = try SpoolFixture()
        let www = fixture.root.path + "/www"
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: fixture.logPath, contents: nil)
        let config = try fixture.writeFullConfig("config.yaml", "status_page: \(www)/index.html\n")
        #expect(try Self.runUnderUmask(["run", "--once"], fixture, config: config) == 0, "\(fixture.log)")
        #expect(Self.mode(www + "/index.html") == 0o644)
        #expect(Self.mode(www + "/status.json") == 0o644)
    }

    @Test("a symlink in the page folder's place is refused at start (nothing written where it points) and, swapped in while running, not followed")
    func symlinkedPageFolder() throws {
        let fixture = try SpoolFixture()
        let www = fixture.root.path + "/www"
        let elsewhere = fixture.root.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: www, withDestinationPath: elsewhere)
        _ = try fixture.writeFullConfig("config.yaml", "status_page: \(www)/index.html\n")
        #expect(try fixture.runOnce(timeout: 30) == 0, "\(fixture.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        #expect(fixture.log.contains("cannot write status_page"), "\(fixture.log)")

        // A real folder at start; while the agent runs it is moved away and a symlink put in its place.
        try FileManager.default.removeItem(atPath: www)
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        try fixture.startDaemon()
        defer { _ = try? fixture.stopDaemon() }
        #expect(try waitUntil(timeout: .seconds(10)) { FileManager.default.fileExists(atPath: www + "/status.json") }, "\(fixture.log)")
        try FileManager.default.moveItem(atPath: www, toPath: www + ".moved")
        try FileManager.default.createSymbolicLink(atPath: www, withDestinationPath: elsewhere)
        try fixture.drop("late.url", "http://127.0.0.1:9/late.bin\n")
        #expect(try waitUntil(timeout: .seconds(10)) {
            ((try? String(contentsOfFile: www + ".moved/status.json", encoding: .utf8)) ?? "").contains("late.url")
        }, "\(fixture.log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
    }

    @Test("U+202E in a job's name is written as \\u{202e} on the page, in its text and its data-job, never raw")
    func bidiOverrideEscaped() throws {
        let fixture = try SpoolFixture()
        let name = "invoice\u{202E}fdp.exe.url"
        try fixture.drop(name, "http://127.0.0.1:9/x.bin\n")
        let page = try fixture.capture(["status", "--html"])
        #expect(page.ending == .exited(0), "\(page)")
        #expect(page.stdout.contains("data-job=\"invoice\\u{202e}fdp.exe.url\""), "\(page.stdout.prefix(4000))")
        #expect(!page.stdout.unicodeScalars.contains("\u{202E}"))
    }
}
