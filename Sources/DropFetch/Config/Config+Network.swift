extension Config {
    /// How transfers reach servers: trust (`tls`), FTP and SFTP settings, proxy and netrc
    /// (DESIGN.md §4). Set at the top level and, key by key, per class.
    public struct Network: Sendable, Equatable {
        /// `tls:` — the CA store and client certificate (CURLOPT_CAINFO, CURLOPT_CAPATH,
        /// CURLOPT_SSLCERT, CURLOPT_SSLKEY). A CA set here replaces the system store, as
        /// `curl --cacert` does; with none, CURL_CA_BUNDLE, SSL_CERT_FILE and SSL_CERT_DIR apply.
        public struct TLS: Sendable, Equatable {
            public var caFile: String?
            public var caPath: String?
            public var clientCert: String?
            public var clientKey: String?
            public init() {}
        }

        /// `ftp.tls`: explicit `AUTH TLS` on `ftp://` URLs (CURLOPT_USE_SSL; RFC 4217).
        public enum FTPSecurity: String, Sendable, Equatable, CaseIterable {
            /// Plain FTP only (CURLUSESSL_NONE).
            case none
            /// TLS when the server offers it, plain otherwise (CURLUSESSL_TRY).
            case `try`
            /// TLS on the control and data connections or fail with `tls` (CURLUSESSL_ALL).
            case require
        }

        /// `ftp:` — security and data-connection mode of FTP transfers.
        public struct FTP: Sendable, Equatable {
            public var tls: FTPSecurity = .try
            /// Passive mode (EPSV, then PASV with CURLOPT_FTP_SKIP_PASV_IP); false is active (PORT).
            public var passive = true
            public init() {}
        }

        /// `sftp:` — the host keys trusted and the key to log in with. Host keys are always checked
        /// (CURLOPT_SSH_KNOWNHOSTS + CURLOPT_SSH_KEYFUNCTION): an unknown or changed key fails with `auth`.
        public struct SFTP: Sendable, Equatable {
            /// nil means `~/.ssh/known_hosts` of the user the agent runs as.
            public var knownHosts: String?
            /// CURLOPT_SSH_PRIVATE_KEYFILE; nil means the first of `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`.
            public var keyFile: String?
            /// A file whose first line is the key's passphrase (CURLOPT_KEYPASSWD).
            public var keyPassphraseFile: String?
            public init() {}
        }

        /// `netrc:` — credentials from a netrc file (CURLOPT_NETRC, CURLOPT_NETRC_FILE).
        public enum Netrc: Sendable, Equatable {
            case off
            /// `~/.netrc` of the user the agent runs as.
            case home
            case file(String)
        }

        public var tls = TLS()
        public var ftp = FTP()
        public var sftp = SFTP()
        /// CURLOPT_PROXY as a URL; nil leaves the `*_proxy` variables to libcurl; "" means no proxy at all.
        public var proxy: String?
        /// CURLOPT_NOPROXY: comma-separated hosts, domains or addresses reached directly; nil leaves `NO_PROXY`.
        public var noProxy: String?
        public var netrc = Netrc.off

        public init() {}
    }

    /// The network settings for a job of `jobClass` (the class's own, which inherit the top level's).
    public func network(for jobClass: JobClass?) -> Network {
        jobClass?.network ?? network
    }
}
