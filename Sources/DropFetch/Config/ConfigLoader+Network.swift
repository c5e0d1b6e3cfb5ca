extension ConfigLoader {
    /// The keys of `Config.Network`, allowed at the top level and in each class.
    static let networkKeys = ["tls", "ftp", "sftp", "proxy", "no_proxy", "netrc"]

    /// Schemes libcurl accepts in CURLOPT_PROXY.
    static let proxySchemes = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    /// Reads one network key into `network`; mappings keep the keys they leave out.
    static func network(_ key: String, _ field: ConfigField, into network: inout Config.Network) throws(ConfigError) {
        switch key {
        case "tls": network.tls = try tls(field, inheriting: network.tls)
        case "ftp": network.ftp = try ftp(field, inheriting: network.ftp)
        case "sftp": network.sftp = try sftp(field, inheriting: network.sftp)
        case "proxy": network.proxy = try proxy(field)
        case "no_proxy": network.noProxy = try noProxy(field)
        case "netrc": network.netrc = try netrc(field)
        default: break
        }
    }

    /// `tls: { ca_file, ca_path, client_cert, client_key }`; null unsets a key.
    static func tls(_ field: ConfigField, inheriting base: Config.Network.TLS) throws(ConfigError) -> Config.Network.TLS {
        var tls = base
        for (key, field) in try field.entries(known: ["ca_file", "ca_path", "client_cert", "client_key"]) {
            switch key {
            case "ca_file": tls.caFile = try field.optionalFilePath()
            case "ca_path": tls.caPath = try field.optionalFilePath()
            case "client_cert": tls.clientCert = try field.optionalFilePath()
            case "client_key": tls.clientKey = try field.optionalFilePath()
            default: break
            }
        }
        if tls.clientKey != nil, tls.clientCert == nil {
            throw field.error("client_key needs a client_cert")
        }
        return tls
    }

    /// `ftp: { tls: none | try | require, passive: true }`.
    static func ftp(_ field: ConfigField, inheriting base: Config.Network.FTP) throws(ConfigError) -> Config.Network.FTP {
        var ftp = base
        for (key, field) in try field.entries(known: ["tls", "passive"]) {
            switch key {
            case "tls": ftp.tls = try field.choice(Config.Network.FTPSecurity.allCases)
            case "passive": ftp.passive = try field.bool()
            default: break
            }
        }
        return ftp
    }

    /// `sftp: { known_hosts, key_file, key_passphrase_file }`; null unsets a key.
    static func sftp(_ field: ConfigField, inheriting base: Config.Network.SFTP) throws(ConfigError) -> Config.Network.SFTP {
        var sftp = base
        for (key, field) in try field.entries(known: ["known_hosts", "key_file", "key_passphrase_file"]) {
            switch key {
            case "known_hosts": sftp.knownHosts = try field.optionalFilePath()
            case "key_file": sftp.keyFile = try field.optionalFilePath()
            case "key_passphrase_file": sftp.keyPassphraseFile = try field.optionalFilePath()
            default: break
            }
        }
        return sftp
    }

    /// `proxy`: a proxy URL (`http://` assumed without a scheme), "" for none at all, or null for
    /// the environment's. Messages never show the URL's credentials.
    static func proxy(_ field: ConfigField) throws(ConfigError) -> String? {
        if field.node.isNull { return nil }
        guard let text = field.node.text else {
            throw field.error("expected a proxy URL such as http://proxy.example.net:3128, got \(field.node.summary)")
        }
        if text.isEmpty { return "" }
        let shown = Redaction.url(text)
        let refused = text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == " " }
        guard !refused else { throw field.error("a proxy URL cannot contain spaces or control characters: '\(shown)'") }
        guard let separator = text.firstRange(of: "://") else { return "http://" + text }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard proxySchemes.contains(scheme) else {
            throw field.error("unknown proxy scheme '\(scheme)' in '\(shown)'; expected one of \(proxySchemes.joined(separator: ", "))")
        }
        guard text[separator.upperBound...].contains(where: { $0 != "/" }) else {
            throw field.error("the proxy URL '\(shown)' names no host")
        }
        return text
    }

    /// `no_proxy`: hosts reached without the proxy, as a comma-separated string or a list.
    static func noProxy(_ field: ConfigField) throws(ConfigError) -> String? {
        if field.node.isNull { return nil }
        var names: [String] = []
        if case .sequence = field.node.content {
            for item in try field.items() { names.append(try item.string()) }
        } else {
            guard let text = field.node.text else {
                throw field.error("expected host names as a list or a comma-separated string, got \(field.node.summary)")
            }
            names = text.split(separator: ",").map(String.init)
        }
        let trimmed = names.map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        for name in trimmed where name.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 }) {
            throw field.error("'\(name)' is not a host name, domain or address")
        }
        return trimmed.joined(separator: ",")
    }

    /// `netrc: true | false | PATH`.
    static func netrc(_ field: ConfigField) throws(ConfigError) -> Config.Network.Netrc {
        if case .scalar(let text, isPlain: true) = field.node.content,
           ["true", "True", "TRUE", "false", "False", "FALSE"].contains(text) {
            return try field.bool() ? .home : .off
        }
        if field.node.isNull { return .off }
        return .file(try field.filePath())
    }
}
