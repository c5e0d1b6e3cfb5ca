import CCurl
import Testing
@testable import DropFetch

/// Issue 14: FTP and SFTP resume only when the remote size and mtime are those recorded; a
/// changed file starts over; the judging of libcurl results by protocol.
@Suite("FTP/SFTP resume decision and protocol judging")
struct ProtocolResumeTests {
    static let mtime: Int64 = 1_700_000_000

    @Test("from zero: write at 0 with the announced size")
    func fresh() {
        #expect(FileResume.decide(offset: 0, remote: .init(remaining: 500, modified: Self.mtime), recordedSize: nil,
                                  recordedModified: nil) == .write(at: 0, total: 500))
        #expect(FileResume.decide(offset: 0, remote: .init(remaining: nil, modified: nil), recordedSize: nil,
                                  recordedModified: nil, bodyEnded: true) == .write(at: 0, total: 0))
    }

    @Test("same size and mtime: append at the offset (the REST offset is resumed_from)")
    func same() {
        #expect(FileResume.decide(offset: 200, remote: .init(remaining: 300, modified: Self.mtime), recordedSize: 500,
                                  recordedModified: Self.mtime) == .write(at: 200, total: 500))
        #expect(FileResume.decide(offset: 500, remote: .init(remaining: nil, modified: Self.mtime), recordedSize: 500,
                                  recordedModified: Self.mtime, bodyEnded: true) == .alreadyComplete)
    }

    @Test("a changed mtime, size, or a missing validator restarts from zero", arguments: [
        FileResume.Remote(remaining: 300, modified: mtime + 1),
        FileResume.Remote(remaining: 301, modified: mtime),
        FileResume.Remote(remaining: 300, modified: nil),
        FileResume.Remote(remaining: nil, modified: mtime),
    ])
    func changed(remote: FileResume.Remote) {
        guard case .restart = FileResume.decide(offset: 200, remote: remote, recordedSize: 500, recordedModified: Self.mtime) else {
            Issue.record("\(remote) was appended to")
            return
        }
    }

    @Test("a record without mtime cannot be resumed over FTP; HTTP needs a validator")
    func canResume() {
        var record = ResumeRecord(owner: "x.url", claim: 1, part: 2)
        record.describe(url: "ftp://h/f", mirror: 0, etag: nil, lastModified: nil, size: 500, modified: nil)
        #expect(!record.canResume(over: .ftp) && !record.canResume(over: .http))
        record.describe(url: "ftp://h/f", mirror: 0, etag: nil, lastModified: nil, size: 500, modified: Self.mtime)
        #expect(record.canResume(over: .ftp) && record.canResume(over: .sftp) && !record.canResume(over: .http))
        #expect(ResumeRecord.decode(record.encoded())?.modified == Self.mtime)
    }

    @Test("schemes map to protocol families")
    func families() {
        #expect(TransferProtocol(scheme: "FTPS") == .ftp && TransferProtocol(scheme: "sftp") == .sftp)
        #expect(TransferProtocol(scheme: "https") == .http)
    }

    @Test("a refused login over FTP/SFTP and a refused SFTP host key are auth; the same codes over HTTPS are not")
    func kinds() {
        #expect(CurlError(CURLE_LOGIN_DENIED).kind(over: .ftp) == .auth)
        #expect(CurlError(CURLE_LOGIN_DENIED).kind(over: .sftp) == .auth)
        #expect(CurlError(CURLE_PEER_FAILED_VERIFICATION).kind(over: .sftp) == .auth)
        #expect(CurlError(CURLE_PEER_FAILED_VERIFICATION).kind(over: .ftp) == .tls)
        #expect(CurlError(CURLE_PEER_FAILED_VERIFICATION).kind(over: .http) == .tls)
        #expect(CurlError(CURLE_USE_SSL_FAILED).kind(over: .ftp) == .tls)
        #expect(FileResume.isUnusableOffset(CURLE_BAD_DOWNLOAD_RESUME))
    }
}

/// libcurl's `no_proxy` rules, which the route under `block_private_addresses` follows.
@Suite("Proxy route and no_proxy")
struct ProxyRouteTests {
    @Test("no_proxy matches names, subdomains, addresses and ranges", arguments: [
        ("example.org", "example.org", true), ("a.example.org", ".example.org", true), ("a.example.org", "example.org", true),
        ("badexample.org", "example.org", false), ("anything", "*", true), ("10.1.2.3", "10.0.0.0/8", true),
        ("11.1.2.3", "10.0.0.0/8", false), ("[::1]", "::1", true), ("127.0.0.1", "localhost, 127.0.0.1", true),
        ("[fd00::5]", "fd00::/8", true), ("example.org.", "example.org", true),
    ])
    func noProxy(host: String, list: String, expected: Bool) {
        #expect(ProxyRoute.matches(host: host, noProxy: list) == expected)
    }

    @Test("the configured proxy, else <scheme>_proxy (never HTTP_PROXY), else all_proxy; no_proxy first")
    func choice() {
        let env = ["http_proxy": "http://h:1", "HTTP_PROXY": "http://upper:1", "FTP_PROXY": "http://f:1", "all_proxy": "socks5://a:1"]
        let read = { (name: String) in env[name] }
        #expect(ProxyRoute.choose(scheme: "http", host: "x", explicit: nil, noProxy: nil, environment: read) == .proxy("http://h:1"))
        #expect(ProxyRoute.choose(scheme: "ftp", host: "x", explicit: nil, noProxy: nil, environment: read) == .proxy("http://f:1"))
        #expect(ProxyRoute.choose(scheme: "https", host: "x", explicit: nil, noProxy: nil, environment: read) == .proxy("socks5://a:1"))
        #expect(ProxyRoute.choose(scheme: "http", host: "x", explicit: "", noProxy: nil, environment: read) == .direct)
        #expect(ProxyRoute.choose(scheme: "http", host: "x", explicit: "http://c:2", noProxy: "x", environment: read) == .direct)
        let upperOnly = { (name: String) in name == "HTTP_PROXY" ? "http://upper:1" : nil }
        #expect(ProxyRoute.choose(scheme: "http", host: "x", explicit: nil, noProxy: nil, environment: upperOnly) == .direct)
    }

    @Test("a target is checked by its resolved addresses")
    func blockedTarget() {
        #expect(ProxyRoute.checkTarget(host: "127.0.0.1") != .allowed(address: "127.0.0.1"))
        #expect(ProxyRoute.checkTarget(host: "[::1]") != .allowed(address: "::1"))
        #expect(ProxyRoute.checkTarget(host: "93.184.216.34") == .allowed(address: "93.184.216.34"))
    }

    @Test("CurlURL reads URLs as libcurl does and resolves relative redirects")
    func curlURL() throws {
        let url = try CurlURL("sftp://me@[::1]:2222/srv/feed.bin")
        #expect(url.scheme == "sftp" && url.host == "[::1]" && url.port == 2222 && url.user == "me")
        let web = try CurlURL("http://Example.ORG/a/b")
        #expect(web.port == 80)
        let next = try CurlURL("../c?x=1", relativeTo: "http://Example.ORG/a/b")
        #expect(next.string?.hasSuffix("/c?x=1") == true && next.host == "example.org")
    }
}

/// Per-host limits (`concurrency.per_host`) count FTP and SFTP transfers by the same host key as HTTP.
@Suite("Per-host keys of FTP and SFTP URLs")
struct ProtocolHostTests {
    @Test("the host of ftp, ftps and sftp URLs, with credentials and ports, is the server's", arguments: [
        ("ftp://user:pw@Feeds.Example:21/a.csv", "feeds.example"), ("ftps://feeds.example/a", "feeds.example"),
        ("sftp://me@[2001:db8::1]:2222/srv/a", "[2001:db8::1]"), ("https://feeds.example/a", "feeds.example"),
    ])
    func host(url: String, host: String) {
        #expect(URLParts(url)?.host == host)
        var limits = Admission(limits: .init(total: 4, perHost: 1))
        limits.started(host: host, className: "default")
        #expect(!limits.admits(host: URLParts(url)?.host ?? "", className: "default"))
    }
}
