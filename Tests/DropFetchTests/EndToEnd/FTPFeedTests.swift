import Foundation
import Testing

/// Issue 14, FTP and explicit FTPS against pyftpdlib started by the test: a download is judged
/// by FTP's rules (no "HTTP 150"), resumes with `REST` when the remote size and mtime are those
/// recorded, starts over when the file changed, and a refused login is `auth`, never retried.
@Suite("FTP and explicit FTPS feeds against pyftpdlib, end to end", .serialized)
struct FTPFeedTests {
    static let mebibyte = 1_048_576
    static let body = TestHTTPServer.randomBytes(3 * mebibyte, seed: 14_001)

    enum Mode: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case plain = "plain FTP (ftp.tls: try, the server has no TLS)"
        case explicitTLS = "explicit FTPS (ftp.tls: require, AUTH TLS, private CA in tls.ca_file)"
        var testDescription: String { rawValue }
    }

    /// A server for `mode` (with its CA when TLS) and a fixture whose config trusts that CA.
    static func setUp(_ mode: Mode, files: [String: [UInt8]], cut: (file: String, after: Int)? = nil,
                      change: (file: String, body: [UInt8], mtime: Int)? = nil,
                      extraConfig: String = "") throws -> (FTPTestServer, SpoolFixture, TestPKI?) {
        var pki: TestPKI?
        var config = "protocols: [ftp, ftps]\n"
        if mode == .explicitTLS {
            let made = try TestPKI(in: try ScriptServer.makeFolder("pki"))
            pki = made
            config += "tls: { ca_file: \(made.caCert) }\nftp: { tls: require }\n"
        }
        let server = try FTPTestServer(files: files, pki: pki, cut: cut, change: change)
        let fixture = try SpoolFixture(extraConfig: config + extraConfig)
        return (server, fixture, pki)
    }

    static func expectFTPFields(_ fixture: SpoolFixture, _ folder: String, _ job: String, resumedFrom: Int64,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        let download = StatusFields.firstDownload(fixture.statusObject(folder, job))
        #expect(download["http_status"] is NSNull, "an FTP reply is not an HTTP status: \(download)", sourceLocation: sourceLocation)
        #expect(StatusFields.int(download["resumed_from"]) == resumedFrom, "\(download)", sourceLocation: sourceLocation)
    }

    @Test("a plain download is done, http_status null, resumed_from 0", arguments: Mode.allCases)
    func plainDownload(_ mode: Mode) throws {
        let (server, fixture, _) = try Self.setUp(mode, files: ["feed.bin": Self.body])
        try fixture.dropSettled("feed.url", server.url("feed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(fixture.logTail())\n\(server.log)")
        expectDone(fixture, "feed.url", body: Self.body)
        Self.expectFTPFields(fixture, "done", "feed.url", resumedFrom: 0)
        #expect(server.events.filter { $0.hasPrefix("RETR") } == ["RETR feed.bin"], "\(server.events)")
        if mode == .explicitTLS { #expect(server.events.contains("AUTH TLS"), "\(server.events)") }
        #expect(!fixture.log.contains(FTPTestServer.password), "the password reached the log")
        let status = try String(contentsOfFile: fixture.statusPath("done", "feed.url"), encoding: .utf8)
        #expect(!status.contains(FTPTestServer.password), "the password reached the status file")
    }

    @Test("a cut data connection is resumed with REST at the .part size: right offset and sha256", arguments: Mode.allCases)
    func resumeAfterCut(_ mode: Mode) throws {
        let (server, fixture, _) = try Self.setUp(mode, files: ["cut.bin": Self.body], cut: ("cut.bin", Self.mebibyte))
        try fixture.dropSettled("cut.url", server.url("cut.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(fixture.logTail())\n\(server.log)")
        expectDone(fixture, "cut.url", body: Self.body)
        let events = server.events
        try #require(events.contains("CUT"), "the server never cut the transfer: \(events)")
        let rest = events.compactMap { $0.hasPrefix("REST ") ? Int64($0.dropFirst(5)) : nil }
        try #require(rest.count == 1, "one resumed RETR expected: \(events)")
        #expect(rest[0] > 0 && rest[0] <= Int64(Self.mebibyte), "REST \(rest[0]) after a cut at \(Self.mebibyte)")
        #expect(events.filter { $0.hasPrefix("RETR") }.count == 2, "\(events)")
        Self.expectFTPFields(fixture, "done", "cut.url", resumedFrom: rest[0])
        #expect(StatusFields.int(fixture.statusObject("done", "cut.url")?["attempts"]) == 2)
    }

    /// How the remote file changes while the first attempt is cut.
    enum Change: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case size = "a longer file, same mtime"
        case mtime = "same size, new content, later mtime"
        case shorter = "a file shorter than the data already fetched"
        var testDescription: String { rawValue }

        var next: (body: [UInt8], mtime: Int) {
            switch self {
            case .size: (TestHTTPServer.randomBytes(3 * FTPFeedTests.mebibyte + 4_321, seed: 14_002), FTPTestServer.mtime)
            case .mtime: (TestHTTPServer.randomBytes(3 * FTPFeedTests.mebibyte, seed: 14_003), FTPTestServer.mtime + 3_600)
            case .shorter: (TestHTTPServer.randomBytes(FTPFeedTests.mebibyte / 4, seed: 14_004), FTPTestServer.mtime + 60)
            }
        }
    }

    @Test("the remote file changes between attempts → the file is exactly the new version, never a splice",
          arguments: Change.allCases)
    func changedBetweenAttempts(_ change: Change) throws {
        let next = change.next
        let (server, fixture, _) = try Self.setUp(.plain, files: ["moving.bin": Self.body], cut: ("moving.bin", Self.mebibyte),
                                                  change: ("moving.bin", next.body, next.mtime))
        try fixture.dropSettled("moving.url", server.url("moving.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(fixture.logTail())\n\(server.log)")
        try #require(server.events.contains("CHANGED moving.bin"), "\(server.events)")
        expectDone(fixture, "moving.url", body: next.body)
        Self.expectFTPFields(fixture, "done", "moving.url", resumedFrom: 0)
        #expect(once.stderr.contains("starting over"), "the restart was not logged:\n\(once.stderr)")
    }

    @Test("a wrong password → failed with kind auth after one login, not retried", arguments: Mode.allCases)
    func wrongPassword(_ mode: Mode) throws {
        let (server, fixture, _) = try Self.setUp(mode, files: ["secret.bin": Self.body])
        try fixture.dropSettled("denied.url", server.url("secret.bin", password: "wrong-pass") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(1), "\(once)\n\(fixture.logTail())")
        #expect(fixture.jobs(in: "failed") == ["denied.url"])
        let status = fixture.statusObject("failed", "denied.url")
        #expect(StatusFields.errorKind(status) == "auth", "\(String(describing: status))")
        #expect(StatusFields.int(status?["attempts"]) == 1, "a refused login must not be retried")
        #expect(server.events.filter { $0.hasPrefix("USER ") }.count == 1, "\(server.events)")
        #expect(StatusFields.firstDownload(status)["http_status"] is NSNull)
        let text = try String(contentsOfFile: fixture.statusPath("failed", "denied.url"), encoding: .utf8)
        #expect(!text.contains("wrong-pass") && !fixture.log.contains("wrong-pass"), "the password leaked")
    }

    @Test("explicit FTPS without the private CA in the config → failed with kind tls")
    func untrustedCertificate() throws {
        let pki = try TestPKI(in: try ScriptServer.makeFolder("pki"))
        let server = try FTPTestServer(files: ["feed.bin": Self.body], pki: pki)
        let fixture = try SpoolFixture(extraConfig: "protocols: [ftp]\nftp: { tls: require }\n")
        try fixture.dropSettled("untrusted.url", server.url("feed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(1), "\(once)")
        #expect(StatusFields.errorKind(fixture.statusObject("failed", "untrusted.url")) == "tls",
                "\(String(describing: fixture.statusObject("failed", "untrusted.url")))")
    }

    @Test("credentials from the netrc file of the config: a URL without user logs in and is done")
    func netrcCredentials() throws {
        let server = try FTPTestServer(files: ["feed.bin": Self.body])
        let netrc = server.folder + "/netrc"
        try "machine 127.0.0.1 login \(FTPTestServer.user) password \(FTPTestServer.password)\n"
            .write(toFile: netrc, atomically: true, encoding: .utf8)
        let fixture = try SpoolFixture(extraConfig: "protocols: [ftp]\nnetrc: \(netrc)\n")
        try fixture.dropSettled("netrc.url", server.url("feed.bin", user: nil) + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(fixture.logTail())")
        expectDone(fixture, "netrc.url", body: Self.body)
        #expect(server.events.contains("USER \(FTPTestServer.user)"), "\(server.events)")
    }

    @Test("passive by default (EPSV); ftp.passive: false connects actively (EPRT/PORT)", arguments: [true, false])
    func dataConnectionMode(passive: Bool) throws {
        let (server, fixture, _) = try Self.setUp(.plain, files: ["feed.bin": Self.body],
                                                  extraConfig: passive ? "" : "ftp: { passive: false }\n")
        try fixture.dropSettled("mode.url", server.url("feed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(server.log)")
        expectDone(fixture, "mode.url", body: Self.body)
        let events = server.events
        if passive {
            #expect(events.contains("EPSV") && !events.contains("EPRT") && !events.contains("PORT"), "\(events)")
        } else {
            #expect((events.contains("EPRT") || events.contains("PORT")) && !events.contains("EPSV"), "\(events)")
        }
    }
}
