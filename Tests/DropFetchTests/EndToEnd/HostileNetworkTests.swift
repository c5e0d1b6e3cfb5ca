@testable import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 24, the network and job-file cases: a job's own proxy is checked by
/// `block_private_addresses` (case 3), a job file cannot hold a slot at a crawl (case 7), and names,
/// secrets and over-long 206 bodies from hostile job files and servers (case 8).
@Suite("Hostile jobs and servers: proxies, slots, names, secrets, ranges", .serialized)
struct HostileNetworkTests {
    /// A public address as a literal: nothing connects to it, the job's proxy would answer for it.
    static let publicTarget = "http://93.184.216.34/feed.bin"

    /// `run --once` without the caller's `*_proxy` variables.
    static func runOnce(_ fixture: SpoolFixture) throws -> CommandRun {
        let cleared: [String: String?] = ["http_proxy": nil, "https_proxy": nil, "HTTPS_PROXY": nil, "all_proxy": nil,
                                          "ALL_PROXY": nil, "no_proxy": nil, "NO_PROXY": nil]
        return try CommandRun(["run", "--once", "--config", fixture.configPath], in: fixture.root.path, environment: cleared)
    }

    static let proxySpellings = [
        "http://127.0.0.1:PORT", "127.0.0.1:PORT", "http://[::ffff:127.0.0.1]:PORT", "socks5h://127.0.0.1:PORT",
        "socks5://127.0.0.1:PORT", "http://2130706433:PORT", "http://0x7f.0.0.1:PORT", "http://0177.0.0.1:PORT",
        "http://localhost:PORT",
    ]

    @Test("a job's all-proxy on loopback is blocked: the internal service gets no connection, the job is failed/blocked",
          arguments: proxySpellings)
    func jobProxyIsChecked(_ spelling: String) throws {
        let internalService = try ListeningSocket()
        let proxy = spelling.replacingOccurrences(of: "PORT", with: "\(internalService.port)")
        // Short limits, so that the code before the fix (which connects and then waits) ends soon.
        let fixture = try SpoolFixture(extraConfig: """
            block_private_addresses: true
            limits: { connect_timeout: 2s, low_speed: { bytes_per_second: 1KB, for: 2s } }

            """)
        try fixture.dropSettled("p.url", "\(Self.publicTarget)\n  all-proxy=\(proxy)\n  header=X-Api-Key: k-3f9a1c\n")

        let run = try Self.runOnce(fixture)

        #expect(internalService.acceptedConnections() == 0, "the job's proxy \(proxy) was connected to")
        #expect(run.status == 1, "\(run.stderr)")
        let status = fixture.statusObject("failed", "p.url")
        #expect(StatusFields.errorKind(status) == "blocked", "\(String(describing: status))\n\(fixture.logTail())")
        #expect(StatusFields.int(status?["attempts"]) == 1)
    }

    @Test("a blocked job proxy is not retried, but the next mirror is tried (and blocked at the same proxy)")
    func jobProxyMirrors() throws {
        let internalService = try ListeningSocket()
        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\n")
        let mirrors = [Self.publicTarget, "http://93.184.216.35/feed.bin"]
        try fixture.dropSettled("m.url", mirrors.joined(separator: "\t")
                                + "\n  all-proxy=http://127.0.0.1:\(internalService.port)\n")

        let run = try Self.runOnce(fixture)

        #expect(run.status == 1, "\(run.stderr)")
        #expect(internalService.acceptedConnections() == 0)
        let status = fixture.statusObject("failed", "m.url")
        #expect(StatusFields.errorKind(status) == "blocked")
        #expect(StatusFields.int(status?["attempts"]) == 1)
        #expect(StatusFields.firstDownload(status)["url"] as? String == mirrors[1], "the second mirror was not tried")
    }

    // MARK: - Case 7: slots

    @Test("max-download-limit below 1K is invalid_job, before any request")
    func crawlingLimitRefused() throws {
        let server = try TestHTTPServer()
        server.serve("/slow.bin", body: TestHTTPServer.randomBytes(4_000, seed: 2_407))
        let fixture = try SpoolFixture()
        for index in 0..<4 {
            try fixture.dropSettled("slow\(index).url", server.url("/slow.bin") + "\n  out=slow\(index).bin\n  max-download-limit=1\n")
        }

        #expect(try fixture.runOnce(timeout: 20) == 1)

        #expect(fixture.jobs(in: "failed").count == 4, "failed: \(fixture.jobs(in: "failed")) done: \(fixture.jobs(in: "done"))")
        let status = fixture.statusObject("failed", "slow0.url")
        #expect(StatusFields.errorKind(status) == "invalid_job")
        #expect((status?["error"] as? [String: Any])?["message"] as? String ?? "" != "")
        #expect(server.requests.isEmpty)
    }

    // MARK: - Case 8: names, secrets, ranges

    @Test("U+202E and other invisible format characters: refused in out=, replaced in Content-Disposition, escaped in the log")
    func bidiNames() throws {
        let body = TestHTTPServer.randomBytes(2_000, seed: 2_409)
        let server = try ScriptedHTTPServer { head, _ in
            var answer = ScriptedHTTPServer.Answer.file(body, etag: nil, range: nil)
            if head.path.hasPrefix("/cd") {
                answer.headers.append(("Content-Disposition", "attachment; filename*=UTF-8''invoice%E2%80%AEfdp.exe"))
            }
            return answer
        }
        let fixture = try SpoolFixture(extraConfig: "content_disposition: true\n")
        try fixture.dropSettled("out.url", server.url("/a.bin") + "\n  out=report\u{202E}fdp.exe\n")
        try fixture.dropSettled("cd.url", server.url("/cd.bin") + "\n")
        try fixture.dropSettled("name\u{200B}\u{2066}.url", server.url("/a.bin") + "\n  out=plain.bin\n")

        _ = try fixture.runOnce(timeout: 30)

        let failed = fixture.statusObject("failed", "out.url")
        #expect(StatusFields.errorKind(failed) == "invalid_job", "\(String(describing: failed))")
        #expect(((failed?["error"] as? [String: Any])?["message"] as? String)?.contains("U+202E") == true)
        let names = fixture.destinationNames()
        #expect(names.sorted() == ["invoice_fdp.exe", "plain.bin"], "\(names)")
        #expect(names.allSatisfy { !$0.unicodeScalars.contains { $0.properties.generalCategory == .format } })
        let log = fixture.log
        for scalar in ["\u{202E}", "\u{200B}", "\u{2066}"] {
            #expect(!log.contains(scalar), "U+\(String(scalar.unicodeScalars.first!.value, radix: 16)) reached the log raw")
        }
        #expect(log.lowercased().contains("\\u{202e}") && log.lowercased().contains("\\u{200b}"), "\(fixture.logTail())")
    }

    static let secretLines = [
        "  http-user=alice\n  http-passwd s3cr3t-pw-41\n",
        "  header=X-Api-Key: s3cr3t-pw-41\u{1}\n",
        "  header=X-Api-Key s3cr3t-pw-41\n",
        "  all-proxy=http://bob:s3cr3t-pw-41@proxy:3128 x\n",
    ]

    @Test("a malformed credential or header line names its line and key, never its value", arguments: secretLines)
    func secretsNotEchoed(_ lines: String) throws {
        let fixture = try SpoolFixture()
        try fixture.dropSettled("s.url", "http://127.0.0.1:9/f.bin\n" + lines)

        _ = try fixture.runOnce(timeout: 30)

        let raw = (try? String(contentsOfFile: fixture.spool + "/failed/s.status.json", encoding: .utf8)) ?? ""
        #expect(StatusFields.errorKind(fixture.statusObject("failed", "s.url")) == "invalid_job", "\(raw)")
        #expect(raw.contains("line "), "\(raw)")
        #expect(!raw.contains("s3cr3t"), "the secret is in the status file: \(raw)")
        #expect(!fixture.log.contains("s3cr3t"), "the secret is in the log: \(fixture.logTail())")
    }

    @Test("a 206 whose body runs past its Content-Range is cut at the range: the .part never grows past the total")
    func overlongPartial() throws {
        let size = 200_000
        let cut = 100_000
        let body = TestHTTPServer.randomBytes(size, seed: 2_410)
        let largest = Locked(0)
        let destination = Locked("")
        let server = try ScriptedHTTPServer { head, number in
            // Before each later answer: how big the agent let the partial file grow.
            let folder = destination.withLock { $0 }
            if let part = try? FileManager.default.attributesOfItem(atPath: folder + "/.over.bin.part")[.size] as? Int {
                largest.withLock { $0 = max($0, part) }
            }
            var answer = ScriptedHTTPServer.Answer.file(body, etag: "\"o1\"", range: head.header("Range"),
                                                        dropAfter: number == 0 ? cut : nil)
            if answer.status == 206 {
                answer.body += TestHTTPServer.randomBytes(50_000, seed: 2_411)
            }
            return answer
        }
        let fixture = try SpoolFixture()
        destination.withLock { $0 = fixture.destination }
        try fixture.dropSettled("over.url", server.url("/over.bin") + "\n")

        _ = try fixture.runOnce(timeout: 60)

        let requests = server.requests
        #expect(requests.contains { $0.status == 206 }, "the case was not exercised: \(requests.map(\.status))")
        #expect(largest.withLock { $0 } <= size, "the partial file grew to \(largest.withLock { $0 }) bytes, past \(size)")
        if fixture.jobs(in: "done").contains("over.url") {
            expectDone(fixture, "over.url", body: body)
        } else {
            #expect(StatusFields.errorKind(fixture.statusObject("failed", "over.url")) == "network")
        }
        for name in fixture.destinationNames() {
            #expect((fixture.fileSize(fixture.destination + "/" + name) ?? 0) <= size, "\(name) is larger than the total")
        }
    }
}

/// A listening TCP socket on 127.0.0.1 that never answers: it stands for an internal service and
/// counts the connections the kernel completed for it (they wait in its backlog).
final class ListeningSocket: @unchecked Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    /// Accepts (and closes) every connection waiting in the backlog; returns how many there were.
    func acceptedConnections() -> Int {
        var count = 0
        while true {
            let client = accept(descriptor, nil, nil)
            guard client >= 0 else { return count }
            close(client)
            count += 1
        }
    }
}
