import Foundation
import Testing

/// Issue 14, SFTP against OpenSSH's sshd started by the test as the current user: the host key is
/// always checked against `sftp.known_hosts` (unknown or different → `auth`, not retried), the
/// login uses `sftp.key_file`, and an interrupted download resumes at the `.part` size when the
/// remote size and mtime are those recorded, or starts over when the file changed.
@Suite("SFTP feeds against OpenSSH sshd, end to end", .serialized)
struct SFTPFeedTests {
    static let mebibyte = 1_048_576
    static let body = TestHTTPServer.randomBytes(3 * mebibyte, seed: 14_101)

    /// A fixture whose config trusts `knownHosts` (written to a file) and logs in with `key`.
    static func fixture(_ server: SSHTestServer, knownHosts: String, key: String? = nil, extra: String = "") throws -> SpoolFixture {
        let path = server.folder + "/known_hosts"
        try knownHosts.write(toFile: path, atomically: true, encoding: .utf8)
        return try SpoolFixture(extraConfig: "protocols: [sftp]\nsftp: { known_hosts: \(path), key_file: \(key ?? server.userKey) }\n" + extra)
    }

    static func failed(_ fixture: SpoolFixture, _ job: String) -> (kind: String?, message: String, attempts: Int64?) {
        let status = fixture.statusObject("failed", job)
        let message = (status?["error"] as? [String: Any])?["message"] as? String ?? ""
        return (StatusFields.errorKind(status), message, StatusFields.int(status?["attempts"]))
    }

    @Test("a download with a known host key and an authorised key is done, http_status null")
    func plainDownload() throws {
        let server = try SSHTestServer(files: ["feed.bin": Self.body])
        let fixture = try Self.fixture(server, knownHosts: try server.knownHostsLine())
        try fixture.dropSettled("feed.url", server.url("feed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(server.log)")
        expectDone(fixture, "feed.url", body: Self.body)
        let download = StatusFields.firstDownload(fixture.statusObject("done", "feed.url"))
        #expect(download["http_status"] is NSNull, "SFTP has no HTTP status: \(download)")
        #expect(StatusFields.int(download["resumed_from"]) == 0)
    }

    @Test("a dropped session is resumed at the .part size: right offset and sha256, fewer bytes sent")
    func resumeAfterCut() throws {
        let server = try SSHTestServer(files: ["cut.bin": Self.body], cut: Self.mebibyte)
        let fixture = try Self.fixture(server, knownHosts: try server.knownHostsLine())
        try fixture.dropSettled("cut.url", server.url("cut.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(server.log)")
        expectDone(fixture, "cut.url", body: Self.body)
        let events = server.events
        let cutAt = try #require(events.compactMap { $0.hasPrefix("CUT ") ? Int64($0.dropFirst(4)) : nil }.first,
                                 "the session was never cut: \(events)")
        let status = fixture.statusObject("done", "cut.url")
        let resumedFrom = try #require(StatusFields.int(StatusFields.firstDownload(status)["resumed_from"]))
        #expect(resumedFrom > 0 && resumedFrom <= cutAt, "resumed_from \(resumedFrom), cut after \(cutAt) bytes were sent")
        #expect(once.stderr.contains("from=\(resumedFrom)"), "the second attempt did not start at \(resumedFrom):\n\(once.stderr)")
        let sent = events.compactMap { $0.hasPrefix("SENT ") ? Int($0.dropFirst(5)) : nil }
        #expect(sent.count == 1 && sent[0] < Self.body.count - Int(resumedFrom) + 65_536,
                "the resumed session sent \(sent) bytes for the \(Self.body.count - Int(resumedFrom)) missing: \(events)")
        #expect(StatusFields.int(status?["attempts"]) == 2)
    }

    enum Change: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case size = "a longer file, same mtime"
        case mtime = "same size, new content, later mtime"
        case shorter = "a file shorter than the data already fetched"
        var testDescription: String { rawValue }

        var next: (body: [UInt8], mtime: Int) {
            switch self {
            case .size: (TestHTTPServer.randomBytes(3 * SFTPFeedTests.mebibyte + 777, seed: 14_102), SSHTestServer.mtime)
            case .mtime: (TestHTTPServer.randomBytes(3 * SFTPFeedTests.mebibyte, seed: 14_103), SSHTestServer.mtime + 3_600)
            case .shorter: (TestHTTPServer.randomBytes(SFTPFeedTests.mebibyte / 4, seed: 14_104), SSHTestServer.mtime + 60)
            }
        }
    }

    @Test("the remote file changes between attempts → the file is exactly the new version, never a splice",
          arguments: Change.allCases)
    func changedBetweenAttempts(_ change: Change) throws {
        let next = change.next
        let server = try SSHTestServer(files: ["moving.bin": Self.body], cut: Self.mebibyte,
                                       change: ("moving.bin", next.body, next.mtime))
        let fixture = try Self.fixture(server, knownHosts: try server.knownHostsLine())
        try fixture.dropSettled("moving.url", server.url("moving.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(server.log)")
        try #require(server.events.contains("CHANGED"), "\(server.events)")
        expectDone(fixture, "moving.url", body: next.body)
        let download = StatusFields.firstDownload(fixture.statusObject("done", "moving.url"))
        #expect(StatusFields.int(download["resumed_from"]) == 0, "\(download)")
    }

    /// What is wrong with the login.
    enum Refusal: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case unknownHost = "the host key is not in known_hosts"
        case otherHostKey = "known_hosts has another key for the host"
        case unauthorisedKey = "the user key is not authorised"
        var testDescription: String { rawValue }
    }

    @Test("a refused host key or login → failed with kind auth and a clear message, not retried",
          arguments: Refusal.allCases)
    func refused(_ refusal: Refusal) throws {
        let server = try SSHTestServer(files: ["feed.bin": Self.body])
        let fixture: SpoolFixture
        switch refusal {
        case .unknownHost: fixture = try Self.fixture(server, knownHosts: "")
        case .otherHostKey: fixture = try Self.fixture(server, knownHosts: try server.wrongKnownHostsLine())
        case .unauthorisedKey: fixture = try Self.fixture(server, knownHosts: try server.knownHostsLine(), key: server.strangerKey)
        }
        try fixture.dropSettled("refused.url", server.url("feed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(1), "\(once)")
        #expect(fixture.jobs(in: "failed") == ["refused.url"])
        let (kind, message, attempts) = Self.failed(fixture, "refused.url")
        #expect(kind == "auth", "\(message)")
        #expect(attempts == 1, "an auth failure must not be retried")
        let connections = server.log.components(separatedBy: "Connection from 127.0.0.1").count - 1
        #expect(connections == 1, "sshd saw \(connections) connections:\n\(server.log)")
        switch refusal {
        case .unknownHost:
            #expect(message.contains("is not in") && message.contains("known_hosts") && message.contains("SHA256:"), "\(message)")
        case .otherHostKey:
            #expect(message.contains("differs"), "\(message)")
        case .unauthorisedKey:
            #expect(!message.isEmpty)
        }
        #expect(fixture.destinationNames().allSatisfy { !$0.hasSuffix(".part") || fixture.fileSize(fixture.destination + "/" + $0) == 0 })
    }

    @Test("a key with a passphrase read from key_passphrase_file logs in")
    func passphrase() throws {
        let server = try SSHTestServer(files: ["feed.bin": Self.body])
        let phrase = server.folder + "/passphrase"
        try (SSHTestServer.passphrase + "\n").write(toFile: phrase, atomically: true, encoding: .utf8)
        let known = server.folder + "/known_hosts"
        try server.knownHostsLine().write(toFile: known, atomically: true, encoding: .utf8)
        let fixture = try SpoolFixture(extraConfig: """
            protocols: [sftp]
            sftp: { known_hosts: \(known), key_file: \(server.lockedKey), key_passphrase_file: \(phrase) }

            """)
        try fixture.dropSettled("locked.url", server.url("feed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(server.log)")
        expectDone(fixture, "locked.url", body: Self.body)
        #expect(!once.stderr.contains(SSHTestServer.passphrase), "the passphrase reached the log")
    }

    @Test("a class matched by host brings its own sftp settings: the top level's would be refused")
    func perClassSettings() throws {
        let server = try SSHTestServer(files: ["feed.bin": Self.body])
        let known = server.folder + "/class_known_hosts"
        try server.knownHostsLine().write(toFile: known, atomically: true, encoding: .utf8)
        let fixture = try Self.fixture(server, knownHosts: "", extra: """
            classes:
              - name: feeds
                match: { host: "127.0.0.1" }
                sftp: { known_hosts: \(known) }

            """)
        try fixture.dropSettled("classed.url", server.url("feed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)\n\(server.log)")
        expectDone(fixture, "classed.url", body: Self.body)
        #expect(fixture.statusObject("done", "classed.url")?["class"] as? String == "feeds")
    }

    @Test("with no sftp settings: ~/.ssh/known_hosts and the user's ~/.ssh/id_ed25519 are used")
    func homeDefaults() throws {
        let server = try SSHTestServer(files: ["feed.bin": Self.body])
        let home = server.folder + "/home"
        try FileManager.default.createDirectory(atPath: home + "/.ssh", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.userKey, toPath: home + "/.ssh/id_ed25519")
        try server.knownHostsLine().write(toFile: home + "/.ssh/known_hosts", atomically: true, encoding: .utf8)
        let fixture = try SpoolFixture(extraConfig: "protocols: [sftp]\n")
        try fixture.dropSettled("home.url", server.url("feed.bin") + "\n")

        let run = try CommandRun(["run", "--once", "--config", fixture.configPath], in: fixture.root.path,
                                 environment: ["HOME": home])
        #expect(run.status == 0, "\(run.stderr)\n\(server.log)")
        expectDone(fixture, "home.url", body: Self.body)
    }
}
