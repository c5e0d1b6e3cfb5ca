import CCurl
import Glibc

/// How a transfer reaches its server (issue 14): the CA store and client certificate, FTP's
/// explicit TLS and passive mode, SFTP's host-key check and login key, proxy and netrc.
extension Transfer {
    /// Applies `request.network` to the handle. Throws a `TransferFailure` (never sent) when the
    /// target is refused by `block_private_addresses` or the SFTP key passphrase cannot be read.
    func configureNetwork() throws {
        let network = request.network
        let environment = { (name: String) -> String? in getenv(name).map { String(cString: $0) } }
        try configureTrust(network.tls, environment: environment)
        switch kind {
        case .ftp: try configureFTP(network.ftp)
        case .sftp: try configureSFTP(network.sftp, environment: environment)
        case .http: break
        }
        switch network.netrc {
        case .off:
            try easy.set(CURLOPT_NETRC, Int(CURL_NETRC_IGNORED.rawValue))
        case .home:
            try easy.set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
        case .file(let path):
            try easy.set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
            try easy.set(CURLOPT_NETRC_FILE, Transfer.expandingHome(path, environment: environment))
        }
        // A CONNECT answer is the proxy's, not the server's: it must not reach the resume check.
        try easy.set(CURLOPT_SUPPRESS_CONNECT_HEADERS, true)
        try configureProxy(network, environment: environment)
    }

    /// CURLOPT_CAINFO / CURLOPT_CAPATH (also for an HTTPS proxy), CURLOPT_SSLCERT / CURLOPT_SSLKEY.
    /// Without a configured CA, the variables apply as the curl tool reads them: CURL_CA_BUNDLE,
    /// else SSL_CERT_FILE and SSL_CERT_DIR.
    private func configureTrust(_ tls: Config.Network.TLS, environment: (String) -> String?) throws(CurlError) {
        var caFile = tls.caFile.map { Transfer.expandingHome($0, environment: environment) }
        var caPath = tls.caPath.map { Transfer.expandingHome($0, environment: environment) }
        if caFile == nil, caPath == nil {
            if let bundle = environment("CURL_CA_BUNDLE"), !bundle.isEmpty {
                caFile = bundle
            } else {
                caFile = environment("SSL_CERT_FILE").flatMap { $0.isEmpty ? nil : $0 }
                caPath = environment("SSL_CERT_DIR").flatMap { $0.isEmpty ? nil : $0 }
            }
        }
        if let caFile {
            try easy.set(CURLOPT_CAINFO, caFile)
            try easy.set(CURLOPT_PROXY_CAINFO, caFile)
        }
        if let caPath {
            try easy.set(CURLOPT_CAPATH, caPath)
            try easy.set(CURLOPT_PROXY_CAPATH, caPath)
        }
        if let cert = tls.clientCert { try easy.set(CURLOPT_SSLCERT, Transfer.expandingHome(cert, environment: environment)) }
        if let key = tls.clientKey { try easy.set(CURLOPT_SSLKEY, Transfer.expandingHome(key, environment: environment)) }
    }

    /// CURLOPT_USE_SSL with CURLOPT_FTPSSLAUTH (explicit `AUTH TLS`, RFC 4217) on `ftp://`; passive mode with
    /// CURLOPT_FTP_SKIP_PASV_IP (the data connection goes to the control connection's address,
    /// never to one a `227` reply names), or active mode (CURLOPT_FTPPORT `-`). Through an HTTP
    /// proxy FTP is tunnelled (CURLOPT_HTTPPROXYTUNNEL), so it stays FTP end to end.
    private func configureFTP(_ ftp: Config.Network.FTP) throws(CurlError) {
        let level = switch ftp.tls {
        case .none: CURLUSESSL_NONE
        case .try: CURLUSESSL_TRY
        case .require: CURLUSESSL_ALL
        }
        try easy.set(CURLOPT_USE_SSL, Int(level.rawValue))
        try easy.set(CURLOPT_FTPSSLAUTH, Int(CURLFTPAUTH_TLS.rawValue))
        if ftp.passive {
            try easy.set(CURLOPT_FTP_USE_EPSV, true)
            try easy.set(CURLOPT_FTP_SKIP_PASV_IP, true)
        } else {
            try easy.set(CURLOPT_FTPPORT, "-")
        }
        try easy.set(CURLOPT_HTTPPROXYTUNNEL, true)
    }

    /// The host key is always checked against known_hosts (HostKeyCheck); the login uses the
    /// configured key (CURLOPT_SSH_PRIVATE_KEYFILE, CURLOPT_KEYPASSWD), else the first of
    /// `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`, or a password; never an agent.
    private func configureSFTP(_ sftp: Config.Network.SFTP, environment: (String) -> String?) throws {
        let knownHosts = Transfer.expandingHome(sftp.knownHosts ?? "~/.ssh/known_hosts", environment: environment)
        let parts = try? CurlURL(request.url)
        let host = parts?.host ?? "the server"
        let server = parts?.port.map { $0 == 22 ? host : "\(host):\($0)" } ?? host
        let check = HostKeyCheck(knownHosts: knownHosts, server: server)
        try check.install(on: easy)
        hostKeyCheck = check
        let methods = CURLSSH_AUTH_PUBLICKEY | CURLSSH_AUTH_PASSWORD | CURLSSH_AUTH_KEYBOARD
        try easy.set(CURLOPT_SSH_AUTH_TYPES, Int(methods))
        let defaultKeys = ["~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa"].map {
            Transfer.expandingHome($0, environment: environment)
        }
        // Without key_file, the first of the user's keys that exists, as ssh(1) tries them.
        if let key = sftp.keyFile.map({ Transfer.expandingHome($0, environment: environment) })
            ?? defaultKeys.first(where: { access($0, R_OK) == 0 }) {
            try easy.set(CURLOPT_SSH_PRIVATE_KEYFILE, key)
        }
        if let file = sftp.keyPassphraseFile {
            let path = Transfer.expandingHome(file, environment: environment)
            let passphrase: String
            do {
                passphrase = try Transfer.firstLine(of: path)
            } catch {
                throw TransferFailure(failure: Failure(.auth, "cannot read sftp.key_passphrase_file: \(error)"),
                                      httpStatus: nil, retryAfter: nil, bytes: part.size, resumedFrom: 0, isFinal: true)
            }
            try easy.set(CURLOPT_KEYPASSWD, passphrase)
        }
    }

    /// The host a transfer of `request` over `network` must have looked up before it starts: its
    /// target's, when it goes through a proxy under `block_private_addresses`; nil otherwise.
    static func proxiedTarget(of request: TransferRequest, over network: Config.Network) -> String? {
        guard request.blockPrivateAddresses, let target = try? CurlURL(request.url) else { return nil }
        let environment = { (name: String) -> String? in getenv(name).map { String(cString: $0) } }
        let route = ProxyRoute.choose(scheme: target.scheme ?? "", host: target.host ?? "",
                                      explicit: request.proxy ?? network.proxy, noProxy: network.noProxy,
                                      environment: environment)
        guard case .proxy = route else { return nil }
        return target.host ?? ""
    }

    /// The job's `all-proxy`, else the class's `proxy` and `no_proxy`. Under
    /// `block_private_addresses` the route is chosen here as libcurl would choose it, and the
    /// target is resolved and checked before anything is sent. A job's own proxy is untrusted:
    /// every socket to it is checked like a direct connection (`openSocket`). A proxy of the
    /// config or the environment is the admin's: its address is let through, and it is pinned to
    /// the address the agent checked (`pinTarget`), so its own lookup cannot rebind the name.
    private func configureProxy(_ network: Config.Network, environment: (String) -> String?) throws {
        let explicit = request.proxy ?? network.proxy
        guard request.blockPrivateAddresses else {
            if let explicit {
                try easy.set(CURLOPT_PROXY, explicit)
            } else if ProxyRoute.environmentNamesNone {
                try easy.set(CURLOPT_PROXY, "")
            }
            if let noProxy = network.noProxy {
                try easy.set(CURLOPT_NOPROXY, noProxy)
            } else if ProxyRoute.environmentNamesNone {
                try easy.set(CURLOPT_NOPROXY, "")
            }
            return
        }
        let target = try? CurlURL(request.url)
        let route = ProxyRoute.choose(scheme: target?.scheme ?? "", host: target?.host ?? "", explicit: explicit,
                                      noProxy: network.noProxy, environment: environment)
        switch route {
        case .direct:
            try easy.set(CURLOPT_PROXY, "")
        case .proxy(let proxy):
            try easy.set(CURLOPT_PROXY, proxy)
            try easy.set(CURLOPT_NOPROXY, "")
            proxyUse = request.proxy == nil ? ProxyRoute.Use.trusted : .job
            let check = request.proxyTargetCheck ?? ProxyRoute.checkTarget(host: target?.host ?? "")
            if case .blocked(let blocked) = check {
                throw TransferFailure(
                    failure: Failure(.blocked, "refused to fetch from \(blocked) through the proxy: a private or local "
                        + "address (block_private_addresses)"),
                    httpStatus: nil, retryAfter: nil, bytes: part.size, resumedFrom: 0, isFinal: true)
            }
            try pinTarget(check, of: target)
        }
    }

    /// Through the trusted proxy, CURLOPT_CONNECT_TO to the checked address with
    /// CURLOPT_HTTPPROXYTUNNEL (an `http://` target goes through `CONNECT` too, so the proxy is
    /// given the address, while Host and TLS SNI keep the name); no pin for an IP literal.
    func pinTarget(_ check: ProxyRoute.TargetCheck, of target: CurlURL?) throws(CurlError) {
        guard proxyUse == .trusted else { return }
        var entry: String?
        if case .allowed(let address) = check, let host = target?.host, let port = target?.port {
            entry = ProxyRoute.pinnedConnection(host: host, port: port, address: address)
        }
        try easy.setConnectTo(entry.map { [$0] })
        if entry != nil { try easy.set(CURLOPT_HTTPPROXYTUNNEL, true) }
    }

    /// At the end of a redirect's headers: through a proxy under `block_private_addresses`, the
    /// target of `Location` (resolved against the current URL, curl_url(3)) is checked before it
    /// is followed, and the address found is what the hop is pinned to (`follow`). Returns false,
    /// after recording the address, to abort the transfer.
    func redirectAllowed() -> Bool {
        guard proxyUse != .none, let location = response(header: .location) else { return true }
        guard let current = easy.info(string: CURLINFO_EFFECTIVE_URL),
              let next = try? CurlURL(location, relativeTo: current), let host = next.host else { return true }
        let check = ProxyRoute.checkTarget(host: host)
        if case .blocked(let blocked) = check {
            blockedAddress = blocked
            return false
        }
        redirectCheck = (check, next)
        return true
    }

    /// `~/…` with the home folder of the user the agent runs as ($HOME, else the password database).
    static func expandingHome(_ path: String, environment: (String) -> String?) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        var home = environment("HOME") ?? ""
        if home.isEmpty, let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir {
            home = String(cString: directory)
        }
        return home + path.dropFirst()
    }

    /// The first line of a small file (a passphrase), without its line end.
    static func firstLine(of path: String) throws(SystemError) -> String {
        let file = try FileDescriptor.open(path, flags: O_RDONLY)
        let bytes = try file.readAll(limit: 4096)
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }
        return String(decoding: line, as: UTF8.self)
    }
}
