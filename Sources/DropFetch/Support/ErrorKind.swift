/// The `error.kind` values of the status-file contract (docs/status-files.md).
public enum ErrorKind: String, Sendable, Equatable, Codable, CaseIterable {
    case invalidJob = "invalid_job"
    case unsupportedProtocol = "unsupported_protocol"
    case httpStatus = "http_status"
    case network
    case timeout
    case tls
    case redirect
    case exists
    case checksumMismatch = "checksum_mismatch"
    case tooLarge = "too_large"
    case noSpace = "no_space"
    case cancelled
    case blocked
    case auth
    /// An FTP or SFTP server has no such file, or refuses to give it (FTP 550, SFTP "no such file"
    /// or "permission denied"); not retried, like an HTTP 404.
    case notFound = "not_found"
    case `internal`
}

/// A classified failure with a message safe to log (no credentials, no raw control characters).
public struct Failure: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    public var kind: ErrorKind
    public var message: String

    public init(_ kind: ErrorKind, _ message: String) {
        self.kind = kind
        self.message = Failure.escaped(message)
    }

    public var description: String { "\(kind.rawValue): \(message)" }

    /// Escapes control characters so that server-supplied text cannot forge log lines.
    static func escaped(_ text: String) -> String {
        // Most messages have nothing to escape: kept as they are, without a scalar-by-scalar copy.
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) {
                result += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
