import Foundation
import Testing

/// Issue 14: `proxy:` and `no_proxy:` from the config (top level or per class), and
/// `block_private_addresses` applied to the target, not to a proxy on 127.0.0.1: through a proxy
/// the target (and each redirect target) is resolved and checked before the request is sent.
@Suite("Proxies from the config and block_private_addresses, end to end", .serialized)
struct ProxyTests {
    static let body = TestHTTPServer.randomBytes(300_000, seed: 14_301)
    /// A public address as a literal (TEST-NET would be refused): nothing connects to it, the
    /// proxy answers for it.
    static let publicTarget = "http://93.184.216.34/feed.bin"

    static func runOnce(_ fixture: SpoolFixture) throws -> CommandRun {
        let cleared: [String: String?] = ["http_proxy": nil, "https_proxy": nil, "HTTPS_PROXY": nil, "all_proxy": nil,
                                          "ALL_PROXY": nil, "no_proxy": nil, "NO_PROXY": nil]
        return try CommandRun(["run", "--once", "--config", fixture.configPath], in: fixture.root.path, environment: cleared)
    }

    @Test("a proxy on 127.0.0.1 is used under block_private_addresses for a public target → done")
    func loopbackProxyAllowed() throws {
        let proxy = try ProxyTestServer(files: ["feed.bin": Self.body])
        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\nproxy: \(proxy.url)\n")
        try fixture.dropSettled("public.url", Self.publicTarget + "\n")

        let run = try Self.runOnce(fixture)
        #expect(run.status == 0, "\(run.stderr)")
        expectDone(fixture, "public.url", body: Self.body)
        #expect(proxy.requests == ["PROXY GET \(Self.publicTarget)"], "\(proxy.requests)")
    }

    @Test("a private target through the proxy is blocked before anything is sent")
    func privateTargetBlocked() throws {
        let proxy = try ProxyTestServer(files: ["feed.bin": Self.body])
        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\nproxy: \(proxy.url)\n")
        try fixture.dropSettled("private.url", "http://10.1.2.3/feed.bin\n")

        let run = try Self.runOnce(fixture)
        #expect(run.status == 1, "\(run.stderr)")
        let status = fixture.statusObject("failed", "private.url")
        #expect(StatusFields.errorKind(status) == "blocked", "\(String(describing: status))")
        #expect(StatusFields.int(status?["attempts"]) == 1)
        #expect(proxy.requests.isEmpty, "the proxy was asked: \(proxy.requests)")
    }

    @Test("a redirect to a private address through the proxy is blocked before it is followed")
    func privateRedirectBlocked() throws {
        let proxy = try ProxyTestServer(files: ["feed.bin": Self.body], redirects: [Self.publicTarget: "http://192.168.1.1/admin"])
        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\nproxy: \(proxy.url)\n")
        try fixture.dropSettled("redirected.url", Self.publicTarget + "\n")

        let run = try Self.runOnce(fixture)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(StatusFields.errorKind(fixture.statusObject("failed", "redirected.url")) == "blocked")
        #expect(proxy.requests == ["PROXY GET \(Self.publicTarget)"], "\(proxy.requests)")
    }

    @Test("no_proxy sends a host direct; a class's proxy applies to its jobs only")
    func noProxyAndClassProxy() throws {
        let proxy = try ProxyTestServer(files: ["feed.bin": Self.body])
        let direct = try TestHTTPServer()
        direct.serve("/direct.bin", body: Self.body)
        let fixture = try SpoolFixture(extraConfig: """
            proxy: \(proxy.url)
            no_proxy: [127.0.0.1, localhost]
            classes:
              - name: outside
                match: { host: "93.184.216.34" }
                proxy: \(proxy.url)
                no_proxy: ""

            """)
        try fixture.dropSettled("direct.url", direct.url("/direct.bin") + "\n")
        try fixture.dropSettled("outside.url", Self.publicTarget + "\n")

        let run = try Self.runOnce(fixture)
        #expect(run.status == 0, "\(run.stderr)")
        expectDone(fixture, "direct.url", body: Self.body)
        expectDone(fixture, "outside.url", body: Self.body)
        #expect(proxy.requests == ["PROXY GET \(Self.publicTarget)"], "\(proxy.requests)")
        #expect(direct.completedRequests().count == 1)
    }
}
