import Foundation

/// A Python HTTPS file server on 127.0.0.1 (a random port) with a certificate of a private CA;
/// with `requireClientCertificate` the TLS handshake needs a client certificate of that CA.
final class HTTPSTestServer: @unchecked Sendable {
    let folder: String
    let port: Int
    private let server: ScriptServer

    init(files: [String: [UInt8]], pki: TestPKI, requireClientCertificate: Bool = false) throws {
        folder = try ScriptServer.makeFolder("https")
        try FileManager.default.createDirectory(atPath: folder + "/files", withIntermediateDirectories: true)
        for (name, body) in files { try Data(body).write(to: URL(fileURLWithPath: folder + "/files/" + name)) }
        var settings: [String: Any] = ["root": folder + "/files", "cert": pki.serverCert, "key": pki.serverKey]
        if requireClientCertificate { settings["client_ca"] = pki.caCert }
        (server, port) = try ScriptServer.python(ProtocolServerScripts.https, name: "https", settings: settings, folder: folder)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    func url(_ name: String, host: String = "127.0.0.1") -> String { "https://\(host):\(port)/\(name)" }

    /// `REQUEST GET /x HTTP/1.1` lines, one per answered request.
    var requests: [String] { ScriptServer.events(folder, "https").filter { $0.hasPrefix("REQUEST ") } }
}
