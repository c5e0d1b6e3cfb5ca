import Foundation
import Glibc

/// OpenSSH's sshd run by the test as the current user on 127.0.0.1 and a free high port, with a
/// generated ed25519 host key and user key; its SFTP subsystem is sftp-server behind the relay of
/// `ProtocolServerScripts.sftpRelay` (which can drop one session after some bytes).
final class SSHTestServer: @unchecked Sendable {
    static let mtime = 1_700_000_000

    let folder: String
    var files: String { folder + "/files" }
    let port: Int
    /// The private key authorised for the current user (no passphrase).
    var userKey: String { folder + "/user_key" }
    /// An authorised private key protected by `passphrase`.
    var lockedKey: String { folder + "/locked_key" }
    static let passphrase = "correct horse battery"
    /// A private key the server does not know.
    var strangerKey: String { folder + "/stranger_key" }
    let user: String
    private var server: ScriptServer?

    /// `cut`: while the marker exists, the next SFTP session ends after `after` bytes;
    /// `change`: at that moment `file` becomes `body`, dated `mtime`.
    init(files served: [String: [UInt8]], cut: Int? = nil, change: (file: String, body: [UInt8], mtime: Int)? = nil) throws {
        folder = try ScriptServer.makeFolder("sshd")
        user = String(cString: getpwuid(geteuid()).pointee.pw_name)
        try FileManager.default.createDirectory(atPath: folder + "/files", withIntermediateDirectories: true)
        for (name, body) in served { try FTPTestServer.write(body, to: folder + "/files/" + name, mtime: Self.mtime) }
        let keygen = "/usr/bin/ssh-keygen"
        try ScriptServer.run(keygen, ["-q", "-t", "ed25519", "-N", "", "-C", "host", "-f", "host_key"], in: folder)
        try ScriptServer.run(keygen, ["-q", "-t", "ed25519", "-N", "", "-C", "user", "-f", "user_key"], in: folder)
        try ScriptServer.run(keygen, ["-q", "-t", "ed25519", "-N", Self.passphrase, "-C", "locked", "-f", "locked_key"], in: folder)
        try ScriptServer.run(keygen, ["-q", "-t", "ed25519", "-N", "", "-C", "stranger", "-f", "stranger_key"], in: folder)
        let authorized = try String(contentsOfFile: folder + "/user_key.pub", encoding: .utf8)
            + String(contentsOfFile: folder + "/locked_key.pub", encoding: .utf8)
        try authorized.write(toFile: folder + "/authorized_keys", atomically: true, encoding: .utf8)

        var relay: [String: Any] = ["server": "/usr/lib/openssh/sftp-server", "events": folder + "/sftp.events",
                                    "listener_pid_file": folder + "/sshd.pid"]
        if let cut {
            relay["cut"] = ["marker": folder + "/cut.marker", "after": cut]
            _ = FileManager.default.createFile(atPath: folder + "/cut.marker", contents: nil)
        }
        if let change {
            let source = folder + "/next-" + change.file
            try FTPTestServer.write(change.body, to: source, mtime: change.mtime)
            relay["change"] = ["source": source, "target": folder + "/files/" + change.file, "mtime": change.mtime]
        }
        try ProtocolServerScripts.sftpRelay.write(toFile: folder + "/relay.py", atomically: true, encoding: .utf8)
        try JSONSerialization.data(withJSONObject: relay).write(to: URL(fileURLWithPath: folder + "/relay.json"))

        port = try Self.freePort()
        let config = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(folder)/host_key
            PidFile \(folder)/sshd.pid
            AuthorizedKeysFile \(folder)/authorized_keys
            StrictModes no
            UsePAM no
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PubkeyAuthentication yes
            PermitRootLogin prohibit-password
            AllowTcpForwarding no
            X11Forwarding no
            LogLevel VERBOSE
            Subsystem sftp \(ScriptServer.pythonPath) \(folder)/relay.py \(folder)/relay.json

            """
        try config.write(toFile: folder + "/sshd_config", atomically: true, encoding: .utf8)
        // Run as root, sshd needs its privilege-separation folder; the package's tmpfiles entry
        // creates it at boot, which a container may not have had.
        if geteuid() == 0 { mkdir("/run/sshd", 0o755) }
        let server = try ScriptServer("/usr/sbin/sshd", ["-D", "-e", "-f", folder + "/sshd_config"], name: "sshd", folder: folder)
        try server.waitReady("sshd to listen on port \(port)") { server.log.contains("Server listening on 127.0.0.1 port \(port)") }
        self.server = server
    }

    deinit {
        server?.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// `sftp://USER@127.0.0.1:PORT/<absolute path of NAME>`.
    func url(_ name: String) -> String { "sftp://\(user)@127.0.0.1:\(port)\(files)/\(name)" }

    /// The known_hosts line for this server's host key (`[127.0.0.1]:PORT ssh-ed25519 …`).
    func knownHostsLine() throws -> String {
        let key = try String(contentsOfFile: folder + "/host_key.pub", encoding: .utf8).split(separator: " ")
        return "[127.0.0.1]:\(port) \(key[0]) \(key[1])\n"
    }

    /// A known_hosts line naming this server with another key (the stranger's).
    func wrongKnownHostsLine() throws -> String {
        let key = try String(contentsOfFile: folder + "/stranger_key.pub", encoding: .utf8).split(separator: " ")
        return "[127.0.0.1]:\(port) \(key[0]) \(key[1])\n"
    }

    /// `SESSION`, `CUT n`, `CHANGED`, `SENT n` lines of the SFTP relay.
    var events: [String] { ScriptServer.events(folder, "sftp") }

    var log: String { server?.log ?? "" }

    /// A port on 127.0.0.1 that nothing listens on now (bind to port 0, read it, close).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
