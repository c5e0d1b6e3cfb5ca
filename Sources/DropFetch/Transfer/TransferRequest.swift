/// Everything one download attempt needs, chosen by the agent from the job and the config.
struct TransferRequest: Sendable {
    /// The job's URL for this mirror: what the status, the resume record and the origin rule of
    /// its headers refer to. The request itself goes to `target` (this URL, or a redirect's).
    var url: String
    /// The index of `url` among the download's mirrors, kept in the resume record.
    var mirror = 0
    /// Asked before each write to the `.part`: a fenced agent writes no byte (DESIGN.md §10).
    var fence: Fence?
    var headers: [String] = []
    /// `http-user`/`http-passwd` or `ftp-user`/`ftp-passwd` of the job file (CURLOPT_USERNAME, CURLOPT_PASSWORD).
    var credentials: DownloadSpec.Credentials?
    /// `all-proxy` of the job file (CURLOPT_PROXY).
    var proxy: String?
    var checksum: Checksum?
    var maxFileSize: Int64
    var connectTimeout: Duration
    var lowSpeed: Config.LowSpeed
    /// Schemes a redirect may go to (RedirectPolicy), and the same joined by commas for
    /// CURLOPT_PROTOCOLS_STR and CURLOPT_REDIR_PROTOCOLS_STR.
    var protocols: [String]
    var protocolList: String
    var maxRedirects = 10
    var durable = true
    /// The config's `digest`: whether the SHA-256 for the status file is computed (a job's
    /// `checksum=` is computed either way).
    var digest = Config.DigestChoice.sha256
    var fileMode: UInt32 = 0o644
    /// CURLOPT_TIMEOUT_MS for the whole attempt; zero means none.
    var timeout: Duration = .zero
    var blockPrivateAddresses = false
    /// The target's lookup, made on a worker before the transfer (`ProxyTargetLookup`) when it
    /// goes through a proxy under `blockPrivateAddresses`; nil: it is looked up when needed.
    var proxyTargetCheck: ProxyRoute.TargetCheck?
    /// Free space the destination must keep after this file (`limits.min_free_space`).
    var minFreeSpace: Int64 = 0
    /// Where redirects led this attempt; nil while it fetches `url` itself (RedirectPolicy).
    var redirect: RedirectHop?
    /// `tls`, `ftp`, `sftp`, `proxy`, `no_proxy`, `netrc` of the job's class (Transfer+Network.swift).
    var network = Config.Network()

    /// The scheme of `url` as libcurl parsed it with the job file (`DownloadSpec.parts`); empty:
    /// parsed from `url` when asked.
    var scheme = ""
    /// The host `Admission` counts this attempt under: the job URL's, kept across redirects (the
    /// hop goes on in the same slot), so the count taken at the start is the one given back.
    var host = ""

    /// The protocol family of `url`, which decides how the request resumes.
    var protocolKind: TransferProtocol { TransferProtocol(scheme: scheme.isEmpty ? URLParts(url)?.scheme ?? "" : scheme) }
}

/// How one attempt ended.
enum TransferOutcome: Sendable, Equatable {
    case completed(TransferResult)
    /// The partial data was unusable (file changed, bad Content-Range): start over at once.
    case restart(reason: String)
    /// A 3xx with a `Location` (raw, maybe relative): nothing was written; the agent decides
    /// whether and how to follow it (RedirectPolicy).
    case redirect(location: String, httpStatus: Int)
    case failed(TransferFailure)
}

struct TransferResult: Sendable, Equatable {
    var bytes: Int64
    /// Lower-case hex; nil under `digest: none`.
    var sha256: String?
    /// The final HTTP status; nil for FTP and SFTP.
    var httpStatus: Int?
    var resumedFrom: Int64
    /// The final response's `Content-Disposition`, for `content_disposition: true`.
    var contentDisposition: String?
}

/// A failed attempt; thrown by `Transfer.init` when the request is refused before it is sent.
struct TransferFailure: Error, Sendable, Equatable {
    var failure: Failure
    var httpStatus: Int?
    /// From a `Retry-After` header (RFC 9110 §10.2.3).
    var retryAfter: Duration?
    var bytes: Int64
    var resumedFrom: Int64
    /// Not worth a retry of the same URL (a refused address or login); other mirrors may still be tried.
    var isFinal = false
    /// A socket, a `.part` reader or a digest eventfd could not be had for want of a descriptor
    /// (EMFILE, ENFILE): the agent's shortage, not the server's, so the download waits without
    /// spending an attempt.
    var outOfDescriptors = false
}
