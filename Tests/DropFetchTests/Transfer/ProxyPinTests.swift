import CCurl
@testable import DropFetch
import Foundation
import Testing

/// Issue 24 case 6: through the config's proxy the agent resolves the target once, checks every
/// address, and pins the proxy to the checked address (CURLOPT_CONNECT_TO with a CONNECT tunnel),
/// so the proxy's own lookup of the name (DNS rebinding) is never used.
@Suite("Proxy targets: checked once, pinned to the checked address (issue 24)", .serialized)
struct ProxyPinTests {
    @Test("a target is checked on every address it resolves to; the first allowed address is the pin")
    func checkTarget() {
        #expect(ProxyRoute.checkTarget(host: "127.0.0.1") == .blocked("127.0.0.1"))
        #expect(ProxyRoute.checkTarget(host: "[::1]") == .blocked("::1"))
        #expect(ProxyRoute.checkTarget(host: "localhost") != .allowed(address: "127.0.0.1"))
        if case .allowed = ProxyRoute.checkTarget(host: "2130706433") { Issue.record("decimal 127.0.0.1 was allowed") }
        #expect(ProxyRoute.checkTarget(host: "93.184.216.34") == .allowed(address: "93.184.216.34"))
        #expect(ProxyRoute.checkTarget(host: "[2606:2800:220:1:248:1893:25c8:1946]")
                == .allowed(address: "2606:2800:220:1:248:1893:25c8:1946"))
    }

    @Test("a name is pinned to the checked address on its port; an IP literal needs no pin")
    func pinnedConnection() {
        #expect(ProxyRoute.pinnedConnection(host: "files.example.org", port: 80, address: "93.184.216.34") == "::93.184.216.34:80")
        #expect(ProxyRoute.pinnedConnection(host: "files.example.org", port: 443, address: "2001:db8::1") == "::[2001:db8::1]:443")
        #expect(ProxyRoute.pinnedConnection(host: "93.184.216.34", port: 80, address: "93.184.216.34") == nil)
        #expect(ProxyRoute.pinnedConnection(host: "[2001:db8::1]", port: 80, address: "2001:db8::1") == nil)
    }

    /// A forward proxy that logs each CONNECT line, accepts it, and then logs the request sent
    /// through the tunnel with its Host header, answering it itself.
    static let connectProxy = #"""
    import json, socket, sys, threading

    cfg = json.load(open(sys.argv[1]))
    events = open(cfg["events"], "a", buffering=1)

    def head(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return None
            data += chunk
        return data.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")

    def serve(conn):
        with conn:
            lines = head(conn)
            if not lines:
                return
            events.write("PROXY " + lines[0] + "\n")
            if not lines[0].startswith("CONNECT "):
                conn.sendall(b"HTTP/1.1 405 No\r\nContent-Length: 0\r\n\r\n")
                return
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            inner = head(conn)
            if not inner:
                return
            host = [l for l in inner[1:] if l.lower().startswith("host:")]
            events.write("INNER " + inner[0] + " " + (host[0] if host else "no Host") + "\n")
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    with open(cfg["ready"] + ".tmp", "w") as ready:
        ready.write(str(server.getsockname()[1]))
    import os
    os.rename(cfg["ready"] + ".tmp", cfg["ready"])
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
    """#

    @Test("libcurl with the pin asks the proxy to CONNECT to the checked address; Host keeps the name",
          arguments: ["http://files.example.invalid/feed.bin", "https://files.example.invalid/feed.bin"])
    func proxyIsGivenTheAddress(_ url: String) throws {
        let folder = try ScriptServer.makeFolder("connect-proxy")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (server, port) = try ScriptServer.python(Self.connectProxy, name: "proxy", settings: [:], folder: folder)
        defer { server.stop() }
        let target = try CurlURL(url)
        let pin = try #require(ProxyRoute.pinnedConnection(host: target.host ?? "", port: target.port ?? 0,
                                                           address: "93.184.216.34"))
        let easy = try CurlEasy()
        try easy.set(CURLOPT_URL, url)
        try easy.set(CURLOPT_PROXY, "http://127.0.0.1:\(port)")
        try easy.set(CURLOPT_NOBODY, true)
        try easy.set(CURLOPT_TIMEOUT_MS, 10_000)
        try easy.setConnectTo([pin])
        try easy.set(CURLOPT_HTTPPROXYTUNNEL, true)

        _ = curl_easy_perform(easy.handle)

        let events = ScriptServer.events(folder, "proxy")
        #expect(events.first == "PROXY CONNECT 93.184.216.34:\(target.port ?? 0) HTTP/1.1", "\(events)")
        #expect(!events.contains { $0.contains("files.example.invalid") && $0.hasPrefix("PROXY") }, "\(events)")
        if url.hasPrefix("http:") {
            #expect(events.dropFirst().first == "INNER HEAD /feed.bin HTTP/1.1 Host: files.example.invalid", "\(events)")
        }
    }
}
