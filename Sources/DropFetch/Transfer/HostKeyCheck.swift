import CCurl
import FoundationEssentials

/// The SFTP host-key check of one transfer (CURLOPT_SSH_KNOWNHOSTS + CURLOPT_SSH_KEYFUNCTION):
/// only a key that matches the known_hosts file is accepted; an unknown or different key is
/// refused, never added, and the refusal is kept as the `auth` failure's message.
final class HostKeyCheck {
    /// The known_hosts file libcurl reads (OpenSSH format, `[host]:port` for other ports).
    let knownHosts: String
    /// `host` or `host:port` as the URL names it, for messages.
    let server: String
    /// Why the key was refused; nil while nothing was refused.
    private(set) var refusal: String?

    init(knownHosts: String, server: String) {
        self.knownHosts = knownHosts
        self.server = server
    }

    /// Sets the options on `easy`; the check must outlive the transfer (it is the callback's data).
    func install(on easy: CurlEasy) throws(CurlError) {
        try easy.set(CURLOPT_SSH_KNOWNHOSTS, knownHosts)
        try easy.setSSHKeyCheck(hostKeyCallback, data: Unmanaged.passUnretained(self).toOpaque())
    }

    /// CURLOPT_SSH_KEYFUNCTION: CURLKHSTAT_FINE for a matching key, CURLKHSTAT_REJECT otherwise.
    fileprivate func judge(found: UnsafePointer<curl_khkey>?, match: curl_khmatch) -> Int32 {
        if match == CURLKHMATCH_OK { return Int32(CURLKHSTAT_FINE.rawValue) }
        let key = found.map(HostKeyCheck.describe) ?? "a key"
        if match == CURLKHMATCH_MISMATCH {
            refusal = "the SFTP host key of \(server) (\(key)) differs from the one in \(knownHosts): "
                + "refused (the server's key changed, or someone is in between)"
        } else {
            refusal = "the SFTP host key of \(server) (\(key)) is not in \(knownHosts): refused "
                + "(add the server's key to sftp.known_hosts after checking its fingerprint)"
        }
        return Int32(CURLKHSTAT_REJECT.rawValue)
    }

    /// `ssh-ed25519 SHA256:…` as ssh-keygen -l prints it.
    static func describe(_ key: UnsafePointer<curl_khkey>) -> String {
        let type: String
        switch key.pointee.keytype {
        case CURLKHTYPE_RSA: type = "ssh-rsa"
        case CURLKHTYPE_DSS: type = "ssh-dss"
        case CURLKHTYPE_ECDSA: type = "ecdsa"
        case CURLKHTYPE_ED25519: type = "ssh-ed25519"
        default: type = "key"
        }
        guard let base = key.pointee.key else { return type }
        // len 0: a NUL-terminated base64 string; otherwise the raw key blob.
        let blob: [UInt8]
        if key.pointee.len == 0 {
            blob = Data(base64Encoded: String(cString: base)).map(Array.init) ?? []
        } else {
            blob = Array(UnsafeRawBufferPointer(start: base, count: key.pointee.len))
        }
        guard !blob.isEmpty else { return type }
        let digest = Digest(.sha256)
        blob.withUnsafeBytes { digest.update($0) }
        let hex = Array(digest.finalize().utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index + 1 < hex.count {
            bytes.append(UInt8(String(decoding: hex[index...index + 1], as: UTF8.self), radix: 16) ?? 0)
            index += 2
        }
        let fingerprint = Data(bytes).base64EncodedString().replacing("=", with: "")
        return "\(type) SHA256:\(fingerprint)"
    }
}

private let hostKeyCallback: dfc_sshkey_callback = { _, _, found, match, context in
    guard let context else { return Int32(CURLKHSTAT_REJECT.rawValue) }
    return Unmanaged<HostKeyCheck>.fromOpaque(context).takeUnretainedValue().judge(found: found, match: match)
}
