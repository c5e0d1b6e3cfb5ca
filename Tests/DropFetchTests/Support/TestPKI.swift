import Foundation

/// A private CA with a server certificate for 127.0.0.1 and localhost and a client certificate,
/// made with the `openssl` command in `folder` (EC P-256 keys, valid for two days).
struct TestPKI {
    let folder: String
    var caCert: String { folder + "/ca.pem" }
    var serverCert: String { folder + "/server.pem" }
    var serverKey: String { folder + "/server.key" }
    var clientCert: String { folder + "/client.pem" }
    var clientKey: String { folder + "/client.key" }

    init(in folder: String, name: String = "dropfetch test CA") throws {
        self.folder = folder
        let openssl = "/usr/bin/openssl"
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try ScriptServer.run(openssl, ["req", "-x509"] + ec + [
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=\(name)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ], in: folder)
        try Self.issue("server", subject: "/CN=localhost",
                       extensions: "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n", in: folder)
        try Self.issue("client", subject: "/CN=dropfetch test client",
                       extensions: "extendedKeyUsage=clientAuth\n", in: folder)
    }

    private static func issue(_ name: String, subject: String, extensions: String, in folder: String) throws {
        let openssl = "/usr/bin/openssl"
        try ("basicConstraints=CA:FALSE\n" + extensions).write(toFile: folder + "/\(name).ext", atomically: true, encoding: .utf8)
        try ScriptServer.run(openssl, ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                       "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject], in: folder)
        try ScriptServer.run(openssl, ["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                                       "-CAcreateserial", "-out", "\(name).pem", "-days", "2",
                                       "-extfile", "\(name).ext"], in: folder)
    }
}
