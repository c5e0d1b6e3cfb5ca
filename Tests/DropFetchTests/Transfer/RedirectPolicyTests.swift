@testable import DropFetch
import Testing

/// RedirectPolicy as a table: where a hop goes, whether the job's headers and credentials go with
/// it (docs/job-files.md), and which kind stops it (§3).
@Suite("Redirect policy: headers stay with their origin")
struct RedirectPolicyTests {
    /// One row: a request (the job's URL, maybe already redirected) answered with `location`.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var job: String
        var hops: [String] = []
        var location: String
        var protocols = ["http", "https"]
        var maxRedirects = 10
        var expected: Expected

        var testDescription: String { name }
    }

    enum Expected: Sendable {
        /// Followed to `target`; the job's headers go along when `withHeaders`.
        case follow(target: String, withHeaders: Bool)
        case refuse(ErrorKind)
    }

    static let headers = ["X-Api-Key: k1", "Authorization: Bearer t", "Cookie: s=1"]
    static let credentials = DownloadSpec.Credentials(user: "u", password: "p")

    static let rows: [Row] = [
        Row(name: "relative path, same origin", job: "http://h.example:8080/a/f.bin", location: "g.bin",
            expected: .follow(target: "http://h.example:8080/a/g.bin", withHeaders: true)),
        Row(name: "absolute path, same origin", job: "http://h.example/a", location: "/b",
            expected: .follow(target: "http://h.example/b", withHeaders: true)),
        Row(name: "another host", job: "http://h.example/a", location: "http://other.example/b",
            expected: .follow(target: "http://other.example/b", withHeaders: false)),
        Row(name: "127.0.0.1 to 127.0.0.2", job: "http://127.0.0.1:8000/a", location: "http://127.0.0.2:8000/a",
            expected: .follow(target: "http://127.0.0.2:8000/a", withHeaders: false)),
        Row(name: "same host, another port", job: "http://h.example:8080/a", location: "http://h.example:8081/a",
            expected: .follow(target: "http://h.example:8081/a", withHeaders: false)),
        Row(name: "same host, https to http (a downgrade)", job: "https://h.example/a", location: "http://h.example/a",
            expected: .follow(target: "http://h.example/a", withHeaders: false)),
        Row(name: "same host, http to https", job: "http://h.example/a", location: "https://h.example/a",
            expected: .follow(target: "https://h.example/a", withHeaders: false)),
        Row(name: "the default port spelt out is the same origin", job: "http://h.example/a", location: "http://h.example:80/b",
            expected: .follow(target: "http://h.example:80/b", withHeaders: true)),
        Row(name: "https default port spelt out", job: "https://h.example:443/a", location: "https://h.example/b",
            expected: .follow(target: "https://h.example/b", withHeaders: true)),
        Row(name: "host names compare without case", job: "http://H.Example/a", location: "http://h.EXAMPLE/b",
            expected: .follow(target: "http://h.EXAMPLE/b", withHeaders: true)),
        Row(name: "scheme-relative Location to another host", job: "https://h.example/a", location: "//other.example/b",
            expected: .follow(target: "https://other.example/b", withHeaders: false)),
        Row(name: "userinfo that looks like a host:port", job: "http://h.example:8080/a",
            location: "http://h.example:8080@other.example/b",
            expected: .follow(target: "http://other.example/b", withHeaders: false)),
        Row(name: "the job's credentials follow a relative redirect", job: "http://u:pw@h.example/a", location: "/b",
            expected: .follow(target: "http://u:pw@h.example/b", withHeaders: true)),
        Row(name: "the job's credentials do not go to another host", job: "http://u:pw@h.example/a",
            location: "http://other.example/b",
            expected: .follow(target: "http://other.example/b", withHeaders: false)),
        Row(name: "a server's own userinfo for another host is dropped", job: "http://h.example/a",
            location: "http://evil:x@other.example/b",
            expected: .follow(target: "http://other.example/b", withHeaders: false)),
        Row(name: "a server's userinfo on the job's origin is replaced by the job's", job: "http://u:pw@h.example/a",
            location: "http://x:y@h.example/b",
            expected: .follow(target: "http://u:pw@h.example/b", withHeaders: true)),
        Row(name: "back to the job's origin after another host: headers again", job: "http://h.example/a",
            hops: ["http://other.example/b"], location: "http://h.example/c",
            expected: .follow(target: "http://h.example/c", withHeaders: true)),
        Row(name: "a relative Location resolves against the hop, not the job", job: "http://h.example/a/f",
            hops: ["http://other.example/x/y"], location: "z",
            expected: .follow(target: "http://other.example/x/z", withHeaders: false)),
        Row(name: "ftp allowed by protocols", job: "http://h.example/a", location: "ftp://h.example/b",
            protocols: ["http", "ftp"], expected: .follow(target: "ftp://h.example/b", withHeaders: false)),
        Row(name: "file:// is not in protocols", job: "http://h.example/a", location: "file:///etc/passwd",
            expected: .refuse(.unsupportedProtocol)),
        Row(name: "ftp:// is not in protocols", job: "http://h.example/a", location: "ftp://h.example/b",
            expected: .refuse(.unsupportedProtocol)),
        Row(name: "gopher:// (a scheme libcurl may not even know)", job: "http://h.example/a",
            location: "gopher://h.example/1x", expected: .refuse(.unsupportedProtocol)),
        Row(name: "control characters in Location", job: "http://h.example/a", location: "/\u{1B}[31mred\u{07}",
            expected: .refuse(.redirect)),
        Row(name: "a redirect to itself is a loop", job: "http://h.example/a", location: "/a",
            expected: .refuse(.redirect)),
        Row(name: "a loop through another host", job: "http://h.example/a", hops: ["http://other.example/b"],
            location: "http://h.example/a", expected: .refuse(.redirect)),
        Row(name: "a fragment does not make a loop new", job: "http://h.example/a", location: "/a#again",
            expected: .refuse(.redirect)),
        Row(name: "max_redirects 0 follows none", job: "http://h.example/a", location: "/b", maxRedirects: 0,
            expected: .refuse(.redirect)),
        Row(name: "the hop after max_redirects is refused", job: "http://h.example/a",
            hops: ["http://h.example/1", "http://h.example/2", "http://h.example/3"], location: "/4", maxRedirects: 3,
            expected: .refuse(.redirect)),
        Row(name: "the hop at max_redirects is followed", job: "http://h.example/a",
            hops: ["http://h.example/1", "http://h.example/2"], location: "/3", maxRedirects: 3,
            expected: .follow(target: "http://h.example/3", withHeaders: true)),
    ]

    /// The request as the agent builds it for `row.job`, walked through `row.hops` by the policy.
    static func request(for row: Row) throws -> TransferRequest {
        var request = TransferRequest(url: row.job, headers: headers, checksum: nil,
                                      maxFileSize: 1 << 30, connectTimeout: .seconds(30),
                                      lowSpeed: Config.LowSpeed(),
                                      protocols: row.protocols, protocolList: row.protocols.joined(separator: ","))
        request.maxRedirects = row.maxRedirects
        request.blockPrivateAddresses = true
        request.credentials = Self.credentials
        for hop in row.hops {
            guard case .follow(let next) = RedirectPolicy.follow(request, to: hop, status: 302) else {
                throw PolicyTestError.setupHopRefused(hop)
            }
            request = next
        }
        return request
    }

    @Test("where each hop goes and what goes with it", arguments: rows)
    func table(row: Row) throws {
        let request = try Self.request(for: row)
        let decision = RedirectPolicy.follow(request, to: row.location, status: 302)
        switch (row.expected, decision) {
        case (.follow(let target, let withHeaders), .follow(let next)):
            #expect(next.target == target)
            #expect(RedirectPolicy.headers(for: next) == (withHeaders ? Self.headers : []))
            #expect(RedirectPolicy.credentials(for: next) == (withHeaders ? Self.credentials : nil))
            #expect(next.redirect?.sameOrigin == withHeaders)
            #expect(next.redirect?.count == row.hops.count + 1)
            // The rest of the request is the job's: its URL (status, resume record), its limits,
            // and block_private_addresses, checked again when the hop connects.
            #expect(next.url == row.job)
            #expect(next.headers == Self.headers)
            #expect(next.blockPrivateAddresses)
            #expect(next.protocols == row.protocols)
        case (.refuse(let kind), .refuse(let failure)):
            #expect(failure.kind == kind, "\(failure)")
        default:
            Issue.record("expected \(row.expected), got \(decision)")
        }
    }

    @Test("a request that was never redirected sends the job's headers to the job's URL")
    func noRedirect() throws {
        let request = try Self.request(for: Row(name: "", job: "http://h.example/a", location: "",
                                                expected: .refuse(.redirect)))
        #expect(request.target == "http://h.example/a")
        #expect(RedirectPolicy.headers(for: request) == Self.headers)
        #expect(RedirectPolicy.credentials(for: request) == Self.credentials)
    }

    @Test("no refusal message carries the job's credentials")
    func messagesAreRedacted() throws {
        let row = Row(name: "", job: "http://u:topsecret@h.example/a", hops: ["/1"], location: "/a",
                      expected: .refuse(.redirect))
        guard case .refuse(let failure) = RedirectPolicy.follow(try Self.request(for: row), to: "/a", status: 302) else {
            Issue.record("a loop was followed")
            return
        }
        #expect(!failure.message.contains("topsecret"), "\(failure.message)")
    }

    @Test("origins: scheme, host without case, port with the scheme's default", arguments: [
        ("http://H.example/x", "http", "h.example", 80),
        ("https://h.example:8443/x", "https", "h.example", 8443),
        ("https://u:p@h.example/x", "https", "h.example", 443),
        ("ftp://h.example/x", "ftp", "h.example", 21),
        ("http://[::1]:81/x", "http", "[::1]", 81),
    ])
    func origins(url: String, scheme: String, host: String, port: Int) {
        #expect(RedirectPolicy.Origin(url) == RedirectPolicy.Origin(scheme: scheme, host: host, port: port))
    }
}

private enum PolicyTestError: Error {
    case setupHopRefused(String)
}
