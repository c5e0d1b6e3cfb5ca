import CCurl

/// The protocol family of a transfer, which decides how it resumes and how its outcome is judged.
enum TransferProtocol: Sendable, Equatable {
    /// http, https: `Range` + `If-Range`, judged by the HTTP status (ResumeDecision).
    case http
    /// ftp, ftps: `REST` (CURLOPT_RESUME_FROM_LARGE), validated by `SIZE` and `MDTM`.
    case ftp
    /// sftp: a seek (CURLOPT_RESUME_FROM_LARGE), validated by the file's stat.
    case sftp

    /// The family of a URL scheme (any case); unknown schemes count as HTTP.
    init(scheme: String) {
        switch scheme.lowercased() {
        case "ftp", "ftps": self = .ftp
        case "sftp", "scp": self = .sftp
        default: self = .http
        }
    }

    /// The family of the connection libcurl used (CURLINFO_SCHEME), `fallback` when it has none yet.
    init(of easy: CurlEasy, fallback: TransferProtocol) {
        self = easy.info(string: CURLINFO_SCHEME).map { TransferProtocol(scheme: $0) } ?? fallback
    }

    /// Whether the remote file is described by size and modification time rather than HTTP validators.
    var isFileBased: Bool { self != .http }

    /// The name used in messages.
    var name: String {
        switch self {
        case .http: "HTTP"
        case .ftp: "FTP"
        case .sftp: "SFTP"
        }
    }
}
