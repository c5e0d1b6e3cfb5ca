import Foundation
import Glibc

/// pyftpdlib on 127.0.0.1 (a random port) serving `files` as user `feed`, plain FTP or explicit
/// FTPS (`AUTH TLS` required on control and data) with a certificate of `pki`.
final class FTPTestServer: @unchecked Sendable {
    static let user = "feed"
    static let password = "s3cret-pass"
    /// The mtime of every served file: a fixed moment, so that a change of it is deliberate.
    static let mtime = 1_700_000_000

    let folder: String
    var root: String { folder + "/files" }
    let port: Int
    private let server: ScriptServer

    /// `cut`: the first RETR of `file` stops after `after` bytes with the data connection dropped.
    /// `change`: at that moment `file` becomes `body`, dated `mtime`.
    init(files: [String: [UInt8]], pki: TestPKI? = nil, cut: (file: String, after: Int)? = nil,
         change: (file: String, body: [UInt8], mtime: Int)? = nil) throws {
        folder = try ScriptServer.makeFolder("ftp")
        try FileManager.default.createDirectory(atPath: folder + "/files", withIntermediateDirectories: true)
        for (name, body) in files {
            try Self.write(body, to: folder + "/files/" + name, mtime: Self.mtime)
        }
        var settings: [String: Any] = ["user": Self.user, "password": Self.password, "root": folder + "/files"]
        if let pki {
            settings["cert"] = pki.serverCert
            settings["key"] = pki.serverKey
        }
        if let cut { settings["cut"] = ["file": cut.file, "after": cut.after, "times": 1] }
        if let change {
            let source = folder + "/next-" + change.file
            try Self.write(change.body, to: source, mtime: change.mtime)
            settings["change"] = ["file": change.file, "source": source, "mtime": change.mtime]
        }
        (server, port) = try ScriptServer.python(ProtocolServerScripts.ftp, name: "ftp", settings: settings, folder: folder)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// `ftp://feed:…@127.0.0.1:PORT/NAME`, or without the credentials.
    func url(_ name: String, user: String? = FTPTestServer.user, password: String? = FTPTestServer.password) -> String {
        var userinfo = ""
        if let user {
            userinfo = Self.percentEncoded(user) + (password.map { ":" + Self.percentEncoded($0) } ?? "") + "@"
        }
        return "ftp://\(userinfo)127.0.0.1:\(port)/\(name)"
    }

    /// What the server saw: `USER x`, `AUTH TLS`, `REST n`, `RETR f`, `CUT`, `CHANGED f`, `LOGIN-FAILED x`.
    var events: [String] { ScriptServer.events(folder, "ftp") }

    var log: String { server.log }

    static func write(_ body: [UInt8], to path: String, mtime: Int) throws {
        try Data(body).write(to: URL(fileURLWithPath: path))
        var times = [timespec(tv_sec: mtime, tv_nsec: 0), timespec(tv_sec: mtime, tv_nsec: 0)]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}
