/// What dropfetch does with each option aria2 allows under a URL in its input files (aria2c(1),
/// "Input File"), apart from those it applies itself (docs/job-files.md).
///
/// The rule: an option that only changes how aria2 splits, schedules, retries, allocates or times
/// out a download — the same bytes still land under the same name, fetched from the same URLs with
/// the same credentials — is accepted, has no effect and is named in `ignored_options`. An option
/// that would change what is fetched, where it goes or which credentials or proxy are used, and
/// that dropfetch does not apply, is refused, so that a job never quietly does less than it asks.
/// Options for BitTorrent and Metalink tuning have no effect on the URLs dropfetch fetches and are
/// ignored; those that choose content (`select-file`, `index-out`, following a torrent or
/// metalink) are refused.
enum Aria2Options {
    /// How one aria2 option is treated.
    enum Rule: Equatable {
        /// Accepted, no effect, listed in `ignored_options`.
        case ignored
        /// Ignored when its value is `harmless` (any case), which is what dropfetch does anyway;
        /// any other value is refused for `reason`.
        case ignoredWhen(harmless: String, reason: String)
        /// Refused as `invalid_job` for `reason`.
        case refused(reason: String)
    }

    /// The rule for `key`, or nil when aria2 has no such input-file option (or dropfetch applies it).
    static func rule(for key: String) -> Rule? {
        if ignored.contains(key) { return .ignored }
        if let (harmless, reason) = ignoredWhen[key] { return .ignoredWhen(harmless: harmless, reason: reason) }
        if let reason = refused[key] { return .refused(reason: reason) }
        return nil
    }

    /// Options that change only how aria2 works, not what it fetches or where.
    static let ignored: Set<String> = [
        // Splitting, connections and pipelining.
        "piece-length", "allow-piece-length-change",
        "stream-piece-selector", "uri-selector", "reuse-uri", "enable-http-pipelining", "enable-http-keep-alive",
        "ftp-reuse-connection", "ftp-pasv", "proxy-method", "async-dns", "use-head", "http-accept-gzip",
        "http-auth-challenge", "http-no-cache",
        // Resuming, retrying and timing out (dropfetch always resumes, and its config decides the rest).
        "continue", "always-resume", "max-resume-failure-tries", "max-tries", "retry-wait", "max-file-not-found",
        "timeout", "connect-timeout", "lowest-speed-limit", "conditional-get",
        // Files on disk (dropfetch's on_conflict and checksum= decide).
        "allow-overwrite", "auto-file-renaming", "file-allocation", "no-file-allocation-limit", "enable-mmap",
        "max-mmap-limit", "remote-time", "check-integrity", "realtime-chunk-checksum",
        "content-disposition-default-utf8",
        // aria2's own session and control.
        "gid", "pause", "force-save", "remove-control-file", "rpc-save-upload-metadata",
        // BitTorrent and Metalink tuning: no effect on a plain URL.
        "bt-enable-hook-after-hash-check", "bt-enable-lpd", "bt-exclude-tracker", "bt-external-ip",
        "bt-force-encryption", "bt-hash-check-seed", "bt-load-saved-metadata", "bt-max-peers",
        "bt-min-crypto-level", "bt-prioritize-piece", "bt-remove-unselected-file", "bt-request-peer-speed-limit",
        "bt-require-crypto", "bt-save-metadata", "bt-seed-unverified", "bt-stop-timeout", "bt-tracker",
        "bt-tracker-connect-timeout", "bt-tracker-interval", "bt-tracker-timeout", "enable-peer-exchange",
        "max-upload-limit", "seed-ratio", "seed-time", "pause-metadata", "metalink-base-uri",
        "metalink-enable-unique-protocol", "metalink-language", "metalink-location", "metalink-os",
        "metalink-preferred-protocol", "metalink-version",
    ]

    /// Options that are harmless with one value (what dropfetch does anyway) and refused with any other.
    static let ignoredWhen: [String: (harmless: String, reason: String)] = [
        "dry-run": ("false", "dropfetch always downloads the file"),
        "hash-check-only": ("false", "dropfetch always downloads the file"),
        "parameterized-uri": ("false", "dropfetch fetches each URL as written, without expanding {…} or […]"),
        "ftp-type": ("binary", "dropfetch transfers FTP files in binary mode only"),
        "follow-torrent": ("false", "dropfetch saves a .torrent file as it is, it does not fetch its content"),
        "follow-metalink": ("false", "dropfetch saves a .metalink file as it is, it does not fetch its content"),
        "bt-metadata-only": ("false", "dropfetch does not fetch BitTorrent content"),
    ]

    /// Options dropfetch does not apply and that would change what is fetched, where, or how it is reached.
    static let refused: [String: String] = [
        "select-file": "dropfetch does not fetch BitTorrent or Metalink content",
        "index-out": "dropfetch does not fetch BitTorrent content",
        "http-proxy": "use all-proxy for this download, or proxy in the config",
        "https-proxy": "use all-proxy for this download, or proxy in the config",
        "ftp-proxy": "use all-proxy for this download, or proxy in the config",
        "http-proxy-user": "use all-proxy=http://USER:PASSWORD@HOST:PORT",
        "http-proxy-passwd": "use all-proxy=http://USER:PASSWORD@HOST:PORT",
        "https-proxy-user": "use all-proxy=http://USER:PASSWORD@HOST:PORT",
        "https-proxy-passwd": "use all-proxy=http://USER:PASSWORD@HOST:PORT",
        "ftp-proxy-user": "use all-proxy=http://USER:PASSWORD@HOST:PORT",
        "ftp-proxy-passwd": "use all-proxy=http://USER:PASSWORD@HOST:PORT",
        "all-proxy-user": "write the proxy's credentials into all-proxy=http://USER:PASSWORD@HOST:PORT",
        "all-proxy-passwd": "write the proxy's credentials into all-proxy=http://USER:PASSWORD@HOST:PORT",
        "no-proxy": "set no_proxy in the config",
        "no-netrc": "the config's netrc setting decides which credentials are used",
        "ssh-host-key-md": "SFTP host keys are checked against the config's sftp.known_hosts",
    ]
}
