import CCurl

extension CurlError {
    /// The error kind for a failure over `transfer`'s protocol: a refused FTP or SFTP login, and an
    /// SFTP host key that was not accepted (CURLE_PEER_FAILED_VERIFICATION), are `auth`; a missing
    /// or forbidden remote file (FTP 550, SFTP's no-such-file and permission-denied) is `not_found`.
    func kind(over transfer: TransferProtocol) -> ErrorKind {
        switch curlCode {
        case CURLE_LOGIN_DENIED where transfer.isFileBased:
            return .auth
        case CURLE_REMOTE_FILE_NOT_FOUND where transfer.isFileBased, CURLE_REMOTE_ACCESS_DENIED where transfer.isFileBased:
            return .notFound
        case CURLE_PEER_FAILED_VERIFICATION where transfer == .sftp:
            return .auth
        default:
            return kind
        }
    }

    /// The status-file error kind for a libcurl result code.
    var kind: ErrorKind {
        switch curlCode {
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_TOO_MANY_REDIRECTS:
            return .redirect
        case CURLE_UNSUPPORTED_PROTOCOL:
            return .unsupportedProtocol
        case CURLE_FILESIZE_EXCEEDED:
            return .tooLarge
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED:
            return .tls
        case CURLE_OUT_OF_MEMORY, CURLE_BAD_FUNCTION_ARGUMENT, CURLE_FAILED_INIT,
             CURLE_UNKNOWN_OPTION, CURLE_NOT_BUILT_IN:
            return .internal
        case CURLE_URL_MALFORMAT:
            return .invalidJob
        default:
            return .network
        }
    }
}
