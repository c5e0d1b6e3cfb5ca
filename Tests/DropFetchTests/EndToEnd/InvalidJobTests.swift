import DropFetch
import Foundation
import Testing

/// docs/job-files.md: every kind of invalid job file lands in failed/ as `invalid_job` naming its line,
/// nothing of it is downloaded, and the other jobs of the same run are done.
@Suite("Invalid job files, end to end")
struct InvalidJobTests {
    /// A job file's content and the text its error message must contain.
    static let cases: [(name: String, content: String, message: String)] = [
        ("unknown-key.url", "priority=1\nhttp://HOST/f\n  colour=blue\n", "line 3"),
        ("malformed.url", "http://HOST/f\nnot a url at all\n", "line 2"),
        ("bad-checksum.url", "http://HOST/f\n  checksum=sha-256=abc\n", "line 2"),
        ("escape.url", "http://HOST/f\n  out=../../x\n", "line 2"),
        ("dotname.url", "http://HOST/f\n  out=.bashrc\n", "line 2"),
        ("absdir.url", "http://HOST/f\n  dir=/etc\n", "line 2"),
        ("badprio.url", "priority=high\nhttp://HOST/f\n", "line 1"),
        ("nourl.url", "# nothing here\n", "URL"),
        ("badclass.url", "class=nosuch\nhttp://HOST/f\n", "class"),
        ("shortcut-nourl.url", "[InternetShortcut]\nIconIndex=1\n", "line 1"),
    ]

    @Test("each invalid file is filed in failed/ with invalid_job and its line; the good job is done")
    func invalidFilesAreFiled() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(4_000, seed: 20)
        server.serve("/f", body: body)
        server.serve("/good.bin", body: body)
        let fixture = try SpoolFixture()
        let host = "\(server.host):\(server.port)"
        for item in Self.cases {
            try fixture.drop(item.name, item.content.replacingOccurrences(of: "HOST", with: host))
        }
        try fixture.drop("good.url", server.url("/good.bin") + "\n")
        // Not UTF-8, a NUL byte, and a file over limits.max_job_file_size (1KB here).
        try Data([0x68, 0x74, 0x74, 0x70, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: fixture.spool + "/inbox/binary.url"))
        try Data(Array("http://\(host)/f\n".utf8) + [0] + [0x0A]).write(to: URL(fileURLWithPath: fixture.spool + "/inbox/nul.url"))
        try ("http://\(host)/f\n" + String(repeating: "# padding\n", count: 200))
            .write(toFile: fixture.spool + "/inbox/huge.url", atomically: false, encoding: .utf8)
        // A symlink, a hard link and a FIFO: none of them is opened as a job.
        try "http://\(host)/f\n".write(toFile: fixture.root.path + "/target.txt", atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: fixture.spool + "/inbox/link.url",
                                                   withDestinationPath: fixture.root.path + "/target.txt")
        try FileManager.default.linkItem(atPath: fixture.root.path + "/target.txt",
                                         toPath: fixture.spool + "/inbox/hardlink.url")
        #expect(mkfifo(fixture.spool + "/inbox/fifo.url", 0o644) == 0)
        try fixture.writeConfig("limits: { max_job_file_size: 1KB }\n")

        #expect(try fixture.runOnce(timeout: 60) == 1)

        #expect(fixture.jobs(in: "done") == ["good.url"])
        let expectedFailed = (Self.cases.map(\.name) + ["binary.url", "nul.url", "huge.url", "link.url",
                                                        "hardlink.url", "fifo.url"]).sorted()
        #expect(fixture.jobs(in: "failed") == expectedFailed)
        for item in Self.cases {
            let status = try fixture.status("failed", item.name)
            #expect(status.error?.kind == .invalidJob, "\(item.name)")
            #expect(status.error?.message.contains(item.message) == true,
                    "\(item.name): \(status.error?.message ?? "no message")")
        }
        for name in ["binary.url", "nul.url", "huge.url", "link.url", "hardlink.url", "fifo.url"] {
            #expect(try fixture.status("failed", name).error?.kind == .invalidJob, "\(name)")
        }
        #expect(try fixture.status("failed", "binary.url").error?.message.contains("UTF-8") == true)
        // Only the good job reached the server; nothing of the invalid ones was fetched.
        #expect(server.completedRequests().map(\.path) == ["/good.bin"])
        #expect(fixture.destinationNames() == ["good.bin"])
        // The symlink's target is untouched and was not moved into the spool as a regular file.
        #expect(FileManager.default.fileExists(atPath: fixture.root.path + "/target.txt"))
    }

    @Test("a scheme outside `protocols` fails with unsupported_protocol, nothing fetched")
    func unsupportedScheme() throws {
        let fixture = try SpoolFixture()
        try fixture.drop("ftp.url", "ftp://127.0.0.1/x.iso\n")
        try fixture.drop("file.url", "[InternetShortcut]\nURL=file:///etc/passwd\n")

        #expect(try fixture.runOnce() == 1)

        #expect(try fixture.status("failed", "ftp.url").error?.kind == .unsupportedProtocol)
        #expect(try fixture.status("failed", "file.url").error?.kind == .unsupportedProtocol)
        #expect(fixture.destinationNames().isEmpty)
    }

    @Test("check exits 2 on a broken config and names line and column; 0 on a good one")
    func checkReportsLineAndColumn() throws {
        let fixture = try SpoolFixture()
        #expect(try fixture.runCLI(["check"]) == 0)
        let broken = fixture.root.path + "/broken.yaml"
        try "spool: /tmp/x\nconcurrency:\n  total: many\n".write(toFile: broken, atomically: false, encoding: .utf8)
        #expect(try fixture.runCLI(["check"], config: broken) == 2)
        #expect(fixture.log.contains("broken.yaml:3:10"), "\(fixture.log)")
        #expect(fixture.log.contains("concurrency.total"))
        try "spool: /tmp/x\nwhat: 1\n".write(toFile: broken, atomically: false, encoding: .utf8)
        #expect(try fixture.runCLI(["run", "--once"], config: broken) == 2)
        #expect(fixture.log.contains("broken.yaml:2:1"))
    }
}
