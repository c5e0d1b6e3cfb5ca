import Foundation
import Testing

/// Issue 14, HTTPS from a server whose certificate comes from a private CA (a Python HTTPS
/// server started by the test): trusted through `tls.ca_file` or `tls.ca_path` (top level or a
/// class), or through CURL_CA_BUNDLE / SSL_CERT_FILE / SSL_CERT_DIR as curl reads them; refused
/// (`tls`) otherwise; a client certificate from `tls.client_cert` / `tls.client_key`.
@Suite("HTTPS with a private CA, end to end", .serialized)
struct PrivateCATests {
    static let body = TestHTTPServer.randomBytes(700_000, seed: 14_201)

    static func setUp(clientCertificate: Bool = false) throws -> (HTTPSTestServer, TestPKI) {
        let pki = try TestPKI(in: try ScriptServer.makeFolder("pki"))
        let server = try HTTPSTestServer(files: ["file.bin": Self.body], pki: pki, requireClientCertificate: clientCertificate)
        return (server, pki)
    }

    /// Runs `run --once` on `fixture` with `environment` added; returns the run.
    static func runOnce(_ fixture: SpoolFixture, environment: [String: String?] = [:]) throws -> CommandRun {
        var variables: [String: String?] = ["CURL_CA_BUNDLE": nil, "SSL_CERT_FILE": nil, "SSL_CERT_DIR": nil]
        for (name, value) in environment { variables[name] = value }
        return try CommandRun(["run", "--once", "--config", fixture.configPath], in: fixture.root.path, environment: variables)
    }

    enum Trust: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case caFile = "tls.ca_file"
        case caPath = "tls.ca_path (a hashed folder)"
        case perClass = "tls.ca_file of a class matched by host"
        case curlBundle = "CURL_CA_BUNDLE"
        case sslCertFile = "SSL_CERT_FILE"
        case sslCertDir = "SSL_CERT_DIR"
        var testDescription: String { rawValue }
    }

    @Test("a private CA trusted through the config or the environment → done", arguments: Trust.allCases)
    func trusted(_ trust: Trust) throws {
        let (server, pki) = try Self.setUp()
        let hashed = pki.folder + "/hashed"
        if trust == .caPath || trust == .sslCertDir {
            try FileManager.default.createDirectory(atPath: hashed, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: pki.caCert, toPath: hashed + "/ca.pem")
            try ScriptServer.run("/usr/bin/openssl", ["rehash", hashed], in: pki.folder)
        }
        var config = ""
        var environment: [String: String?] = [:]
        switch trust {
        case .caFile: config = "tls: { ca_file: \(pki.caCert) }\n"
        case .caPath: config = "tls: { ca_path: \(hashed) }\n"
        case .perClass: config = "classes:\n  - name: partner\n    match: { host: \"127.0.0.1\" }\n    tls: { ca_file: \(pki.caCert) }\n"
        case .curlBundle: environment["CURL_CA_BUNDLE"] = pki.caCert
        case .sslCertFile: environment["SSL_CERT_FILE"] = pki.caCert
        case .sslCertDir: environment["SSL_CERT_DIR"] = hashed
        }
        let fixture = try SpoolFixture(extraConfig: config)
        try fixture.dropSettled("private.url", server.url("file.bin") + "\n")

        let run = try Self.runOnce(fixture, environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        expectDone(fixture, "private.url", body: Self.body)
        #expect(StatusFields.int(StatusFields.firstDownload(fixture.statusObject("done", "private.url"))["http_status"]) == 200)
    }

    @Test("the private CA nowhere → failed with kind tls; the server answered nothing")
    func untrusted() throws {
        let (server, _) = try Self.setUp()
        let fixture = try SpoolFixture()
        try fixture.dropSettled("untrusted.url", server.url("file.bin") + "\n")

        let run = try Self.runOnce(fixture)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(StatusFields.errorKind(fixture.statusObject("failed", "untrusted.url")) == "tls",
                "\(String(describing: fixture.statusObject("failed", "untrusted.url")))")
        #expect(server.requests.isEmpty, "\(server.requests)")
    }

    @Test("a server that asks for a client certificate: done with tls.client_cert and client_key, tls without")
    func clientCertificate() throws {
        let (server, pki) = try Self.setUp(clientCertificate: true)
        let with = try SpoolFixture(extraConfig: "tls: { ca_file: \(pki.caCert), client_cert: \(pki.clientCert), client_key: \(pki.clientKey) }\n")
        try with.dropSettled("mtls.url", server.url("file.bin") + "\n")
        let done = try Self.runOnce(with)
        #expect(done.status == 0, "\(done.stderr)")
        expectDone(with, "mtls.url", body: Self.body)

        let without = try SpoolFixture(extraConfig: "tls: { ca_file: \(pki.caCert) }\n")
        try without.dropSettled("anonymous.url", server.url("file.bin") + "\n")
        let refused = try Self.runOnce(without)
        #expect(refused.status == 1, "\(refused.stderr)")
        let kind = StatusFields.errorKind(without.statusObject("failed", "anonymous.url"))
        #expect(kind == "tls" || kind == "network", "a refused handshake: \(String(describing: kind))")
    }
}
