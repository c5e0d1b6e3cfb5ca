import Foundation
import Testing

/// Issue 24, case 6: DNS rebinding through the config's proxy. The agent resolves the target
/// itself, checks the address, and asks the proxy to CONNECT to that address: a proxy that would
/// resolve the name to 127.0.0.1 is never given the name. The agent runs in a private mount
/// namespace whose /etc/hosts gives the name a public address; the test's proxy logs what it was
/// asked for and answers from its own file, so nothing leaves the machine.
@Suite("DNS rebinding through a proxy, end to end",
       .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
                "a private /etc/hosts needs root and unshare(1)"))
struct ProxyRebindingTests {
    static let body = TestHTTPServer.randomBytes(40_000, seed: 24_600)

    /// A CONNECT proxy that logs `CONNECT <authority>` and then plays the origin inside the tunnel.
    static let script = #"""
    import json, os, socket, sys, threading

    cfg = json.load(open(sys.argv[1]))
    events = open(cfg["events"], "a", buffering=1)
    body = open(cfg["body"], "rb").read()

    def serve(conn):
        f = conn.makefile("rb")
        line = f.readline().decode("latin-1").strip()
        while f.readline() not in (b"\r\n", b"\n", b""):
            pass
        events.write(line.split(" ")[0] + " " + line.split(" ")[1] + "\n")
        if not line.startswith("CONNECT "):
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            conn.close()
            return
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        request = f.readline().decode("latin-1").strip()
        host = ""
        while True:
            header = f.readline()
            if header in (b"\r\n", b"\n", b""):
                break
            if header.lower().startswith(b"host:"):
                host = header.decode("latin-1").split(":", 1)[1].strip()
        events.write("TUNNEL " + request + " Host=" + host + "\n")
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        conn.close()

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    with open(cfg["ready"] + ".tmp", "w") as ready:
        ready.write(str(server.getsockname()[1]))
    os.rename(cfg["ready"] + ".tmp", cfg["ready"])
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
    """#

    @Test("a name the agent resolves to a public address reaches the proxy as that address, never as the name")
    func proxyGetsTheCheckedAddress() throws {
        let folder = try ScriptServer.makeFolder("rebind")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data(Self.body).write(to: URL(fileURLWithPath: folder + "/body"))
        let (server, port) = try ScriptServer.python(Self.script, name: "proxy", settings: ["body": folder + "/body"], folder: folder)
        defer { server.stop() }
        // The agent's view of DNS: the name is public (TEST-NET-3); a proxy resolving it itself
        // could be told 127.0.0.1 instead, which is what pinning rules out.
        let hosts = folder + "/hosts"
        try "127.0.0.1 localhost\n203.0.113.9 rebind.example\n".write(toFile: hosts, atomically: true, encoding: .utf8)

        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\nproxy: http://127.0.0.1:\(port)\n")
        try fixture.dropSettled("rebind.url", "http://rebind.example/feed.bin\n")
        let cleared: [String: String?] = ["http_proxy": nil, "https_proxy": nil, "HTTPS_PROXY": nil, "all_proxy": nil,
                                          "ALL_PROXY": nil, "no_proxy": nil, "NO_PROXY": nil]
        let run = try CommandRun(["-m", "--propagation", "private", "sh", "-c",
                                  "mount --bind \"$0\" /etc/hosts && exec \"$1\" run --once --config \"$2\"",
                                  hosts, SpoolFixture.binary, fixture.configPath],
                                 program: "/usr/bin/unshare", in: fixture.root.path, environment: cleared)
        #expect(run.status == 0, "\(run.stderr)")
        let events = ScriptServer.events(folder, "proxy")
        #expect(events.first == "CONNECT 203.0.113.9:80", "\(events)")
        #expect(!events.contains { $0.hasPrefix("CONNECT rebind.example") }, "the proxy was given the name: \(events)")
        #expect(events.contains("TUNNEL GET /feed.bin HTTP/1.1 Host=rebind.example"), "\(events)")
        expectDone(fixture, "rebind.url", body: Self.body)
    }
}
