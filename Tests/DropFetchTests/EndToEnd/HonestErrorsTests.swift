import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 25, item 10: error kinds that say what happened. A missing FTP or SFTP file is
/// `not_found` and not retried (an HTTP 404 stays `http_status`); a proxy's 407 is `http_status`,
/// not retried, both for a plain request and for a refused CONNECT tunnel.
@Suite("Error kinds, end to end", .serialized)
struct HonestErrorsTests {
    /// The `attempt failed` log lines of `job` in `log`.
    static func failedAttempts(_ log: String, _ job: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.contains("msg=\"attempt failed\"") && $0.contains("job=\(job)") }
    }

    @Test("an FTP 550 for a missing file is not_found, one attempt, not retried")
    func ftpMissingFile() throws {
        let server = try FTPTestServer(files: ["there.bin": [1, 2, 3]])
        let fixture = try SpoolFixture(extraConfig: "protocols: [ftp]\n")
        try fixture.dropSettled("gone.url", server.url("gone.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(1), "\(once)")
        let status = try fixture.status("failed", "gone.url")
        #expect(status.error?.kind == .notFound, "\(status.error?.description ?? "")")
        #expect(status.attempts == 1)
        let lines = Self.failedAttempts(once.stderr, "gone.url")
        #expect(lines.count == 1 && lines.allSatisfy { $0.contains("next=none") && $0.contains("error=not_found") }, "\(lines)")
    }

    @Test("an SFTP \"no such file\" is not_found, one attempt, not retried")
    func sftpMissingFile() throws {
        let server = try SSHTestServer(files: ["there.bin": [1, 2, 3]])
        let path = server.folder + "/known_hosts"
        try (try server.knownHostsLine()).write(toFile: path, atomically: true, encoding: .utf8)
        let fixture = try SpoolFixture(extraConfig: "protocols: [sftp]\nsftp: { known_hosts: \(path), key_file: \(server.userKey) }\n")
        try fixture.dropSettled("gone.url", server.url("gone.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(1), "\(once)\n\(server.log)")
        let status = try fixture.status("failed", "gone.url")
        #expect(status.error?.kind == .notFound, "\(status.error?.description ?? "")")
        #expect(status.attempts == 1)
        #expect(Self.failedAttempts(once.stderr, "gone.url").count == 1)
    }

    /// A forward proxy that answers every request, CONNECT included, with 407 and logs its line.
    static let refusingProxy = #"""
    import http.server, json, os, sys

    cfg = json.load(open(sys.argv[1]))
    events = open(cfg["events"], "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, format, *args):
            pass
        def refuse(self):
            events.write(self.command + " " + self.path + "\n")
            self.send_response(407)
            self.send_header("Proxy-Authenticate", 'Basic realm="proxy"')
            self.send_header("Content-Length", "0")
            self.end_headers()
        do_GET = refuse
        do_CONNECT = refuse

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.socket.getsockname()[1]
    with open(cfg["ready"] + ".tmp", "w") as ready:
        ready.write(str(port))
    os.rename(cfg["ready"] + ".tmp", cfg["ready"])
    server.serve_forever()
    """#

    @Test("a proxy's 407 is http_status 407, asked once, for a plain request and for a CONNECT tunnel")
    func proxyRefusal() throws {
        let folder = try ScriptServer.makeFolder("proxy407")
        let (proxy, port) = try ScriptServer.python(Self.refusingProxy, name: "proxy", settings: [:], folder: folder)
        defer { proxy.stop() }
        let fixture = try SpoolFixture(extraConfig: "proxy: http://127.0.0.1:\(port)\n")
        try fixture.drop("plain.url", "http://127.0.0.1:9/plain.bin\n")
        try fixture.drop("tunnel.url", "https://127.0.0.1:9/tunnel.bin\n")

        #expect(try fixture.runOnce() == 1)

        for job in ["plain.url", "tunnel.url"] {
            let status = try fixture.status("failed", job)
            #expect(status.error?.kind == .httpStatus, "\(job): \(status.error?.description ?? "")")
            #expect(status.downloads.first?.httpStatus == 407, "\(job)")
            #expect(status.attempts == 1, "\(job)")
        }
        let events = ScriptServer.events(folder, "proxy")
        #expect(events.filter { $0.hasPrefix("GET ") }.count == 1, "\(events)")
        #expect(events.filter { $0.hasPrefix("CONNECT ") }.count == 1, "not retried: \(events)")
    }
}
