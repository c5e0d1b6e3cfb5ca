import CCrypto
import CLinux
import Glibc

/// The agent user's secret that seals resume records (HMAC-SHA256, RFC 2104): a record counts
/// only if the agent can show it wrote it, so a destination writer cannot forge one
/// (docs/security.md). 32 random bytes in `record-key`, mode 0600, in the user's state folder
/// (`folder(environment:)`): outside the spool, whose layout is a contract, and outside anything
/// the group of the spool may read. Agents of one user on one host share it.
/// A class of constants: every claim, reservation and filing takes the key along, and the struct
/// it was copied its two hash states (over 200 bytes) each time.
final class RecordKey: Sendable, Equatable {
    static let fileName = "record-key"
    static let length = 32
    let bytes: [UInt8]
    /// SHA-256 states with the key padded to a block and xored with RFC 2104's ipad and opad
    /// absorbed, made once: a seal copies them (`dfl_hmac_sha256_seal`).
    private let inner: SHA256_CTX
    private let outer: SHA256_CTX

    init(bytes: [UInt8]) {
        self.bytes = bytes
        // A key longer than a block is hashed first (RFC 2104, 2); the agent's are 32 bytes.
        let block = bytes.count > 64 ? RecordKey.sha256([bytes]) : bytes
        let padded = block + [UInt8](repeating: 0, count: 64 - block.count)
        var inner = SHA256_CTX()
        var outer = SHA256_CTX()
        dfl_sha256_absorbed(padded.map { $0 ^ 0x36 }, 64, &inner)
        dfl_sha256_absorbed(padded.map { $0 ^ 0x5c }, 64, &outer)
        self.inner = inner
        self.outer = outer
    }

    static func == (lhs: RecordKey, rhs: RecordKey) -> Bool { lhs.bytes == rhs.bytes }

    /// The HMAC-SHA256 of `message` under this key (RFC 2104), from the states made at init:
    /// HMAC(3) fetches its digest and MAC anew on each call, which cost a small job more than its
    /// whole status file.
    func seal(_ message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: 32)
        message.withUnsafeBufferPointer { bytes in
            mac.withUnsafeMutableBufferPointer { seal(bytes, into: $0) }
        }
        return mac
    }

    /// The same into `mac` (32 bytes) from bytes the caller holds: no array made for either.
    func seal(_ message: UnsafeBufferPointer<UInt8>, into mac: UnsafeMutableBufferPointer<UInt8>) {
        precondition(mac.count >= 32, "an HMAC-SHA256 seal is 32 bytes")
        withUnsafePointer(to: inner) { inner in
            withUnsafePointer(to: outer) { outer in
                dfl_hmac_sha256_seal(inner, outer, message.baseAddress, message.count, mac.baseAddress)
            }
        }
    }

    /// SHA-256 fetched once (EVP_MD_fetch(3)): immutable and shared by every thread, as OpenSSL allows.
    nonisolated(unsafe) private static let method = EVP_MD_fetch(nil, "SHA2-256", nil)

    /// SHA-256 of the concatenation of `parts` (EVP_DigestInit_ex2(3)).
    private static func sha256(_ parts: [[UInt8]]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestInit_ex2(context, method, nil)
        for part in parts { part.withUnsafeBufferPointer { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) } }
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        return output
    }

    /// Whether `mac` is the seal of `message` (compared in constant time).
    func verifies(_ mac: [UInt8], of message: [UInt8]) -> Bool {
        verifies(mac, of: message, truncatedTo: 32)
    }

    /// Whether `mac` is the first `length` bytes (16 or more) of the seal of `message`: a short
    /// seal, as HMAC-SHA-256-128 of RFC 4868, where a forger has one chance in 2^128 a try.
    func verifies(_ mac: [UInt8], of message: [UInt8], truncatedTo length: Int) -> Bool {
        let expected = seal(message).prefix(length)
        guard length >= 16, mac.count == length, expected.count == length else { return false }
        var difference: UInt8 = 0
        for (byte, wanted) in zip(mac, expected) { difference |= byte ^ wanted }
        return difference == 0
    }

    /// Where the key lives: `$STATE_DIRECTORY` (systemd's StateDirectory=), else
    /// `$XDG_STATE_HOME/dropfetch`, else `~/.local/state/dropfetch` (`$HOME`, or the user's home
    /// in the password database when it is unset, as under `env -i`); nil when none is known.
    static func folder(_ variable: (String) -> String? = { getenv($0).map { String(cString: $0) } }) -> String? {
        if let state = variable("STATE_DIRECTORY")?.split(separator: ":").first, state.hasPrefix("/") {
            return String(state)
        }
        if let xdg = variable("XDG_STATE_HOME"), xdg.hasPrefix("/") { return xdg + "/dropfetch" }
        if let home = variable("HOME"), home.hasPrefix("/") { return home + "/.local/state/dropfetch" }
        // getpwuid(3): the home of the effective user when the environment names none.
        if let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
            let home = String(cString: directory)
            if home.hasPrefix("/") { return home + "/.local/state/dropfetch" }
        }
        return nil
    }

    /// The key in `folder` (created, mode 0700, when missing) as `loadOrCreate(in:)` makes it.
    static func loadOrCreate(inFolder folder: String) throws(SystemError) -> RecordKey {
        try FileSystem.makeDirectories(folder, mode: 0o700, trusting: folder)
        return try loadOrCreate(in: DirectoryHandle.openRoot(folder, create: false))
    }

    /// The key in `folder` if it exists and can be trusted; nil otherwise (nothing is created).
    static func read(inFolder folder: String) -> RecordKey? {
        (try? DirectoryHandle.openRoot(folder, create: false)).flatMap { try? read(in: $0) }
    }

    /// 32 bytes from getrandom(2).
    static func random() throws(SystemError) -> RecordKey {
        var bytes = [UInt8](repeating: 0, count: length)
        var filled = 0
        while filled < length {
            let got = bytes.withUnsafeMutableBytes { dfl_getrandom($0.baseAddress! + filled, UInt(length - filled)) }
            if got < 0 {
                if dfl_errno() == EINTR { continue }
                throw SystemError.current("getrandom")
            }
            filled += got
        }
        return RecordKey(bytes: bytes)
    }

    /// The key in `folder`, created when missing (an agent starting). A key file that is not a
    /// plain file of this user, mode 0600, 32 bytes, is not trusted: it is replaced by a new key
    /// (the records sealed with the old one then count for nothing, and their data is fetched again).
    static func loadOrCreate(in spool: DirectoryHandle) throws(SystemError) -> RecordKey {
        for _ in 0..<4 {
            if let key = try read(in: spool) { return key }
            if try spool.status(fileName) != nil {
                try spool.removeIfPresent(fileName)
                continue
            }
            let key = try random()
            let temp = fileName + ".\(getpid()).tmp"
            try? spool.removeIfPresent(temp)
            let file = try spool.open(temp, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            do {
                try file.write(key.bytes)
                try file.sync()
                // link(2) never replaces: of agents starting together, the first key wins.
                let linked = try retryingEINTR("link", FileSystem.join(spool.path, fileName), tolerating: EEXIST) {
                    linkat(spool.descriptor, temp, spool.descriptor, fileName, 0)
                }
                try spool.removeIfPresent(temp)
                if linked != nil {
                    try spool.sync()
                    return key
                }
            } catch {
                try? spool.removeIfPresent(temp)
                throw error
            }
        }
        throw SystemError(code: EAGAIN, operation: "create the record key (it kept changing)", path: FileSystem.join(spool.path, fileName))
    }

    /// The key in `spool` if it exists and can be trusted (a control command does not create one);
    /// nil when it is missing, unreadable or not this user's own 0600 file.
    static func read(in spool: DirectoryHandle) throws(SystemError) -> RecordKey? {
        let file: FileDescriptor
        do {
            file = try spool.open(fileName, flags: O_RDONLY | O_NONBLOCK)
        } catch where [ENOENT, ELOOP, EACCES, EPERM, ENXIO].contains(error.code) {
            return nil
        }
        let info = try file.status()
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o077 == 0,
              info.st_size == length else { return nil }
        let bytes = try file.readAll(limit: length + 1)
        return bytes.count == length ? RecordKey(bytes: bytes) : nil
    }
}
