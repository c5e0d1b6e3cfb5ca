import CCurl

/// The resume decision for FTP and SFTP (issue 14): the `.part` continues only when the remote
/// file has the size and modification time recorded when its data was written; a changed file
/// starts again from zero, so that a published file is never a splice of two versions.
enum FileResume {
    /// What the server said about the file before its data, as libcurl reports it.
    struct Remote: Sendable, Equatable {
        /// Bytes still to come after the resume offset (CURLINFO_CONTENT_LENGTH_DOWNLOAD_T), if known.
        var remaining: Int64?
        /// Seconds since the epoch (CURLINFO_FILETIME_T from `MDTM` or the SFTP stat), if known.
        var modified: Int64?
    }

    /// Decides at the first body byte, or at the end when no byte came (`bodyEnded`: libcurl
    /// found nothing left to fetch, e.g. an offset equal to the remote size).
    /// - Parameters:
    ///   - offset: the resume offset that was asked for (0 when none).
    ///   - recordedSize, recordedModified: what the resume record says of the data on disk.
    static func decide(offset: Int64, remote: Remote, recordedSize: Int64?, recordedModified: Int64?,
                       bodyEnded: Bool = false) -> ResumeDecision {
        guard offset > 0 else {
            return .write(at: 0, total: remote.remaining ?? (bodyEnded ? 0 : nil))
        }
        guard let modified = remote.modified else {
            return .restart("the server gave no modification time, so the partial data cannot be proved current")
        }
        guard let recordedModified, modified == recordedModified else {
            return .restart("the remote file's modification time changed from \(recordedModified.map(String.init) ?? "unknown") "
                + "to \(modified)")
        }
        let total: Int64
        if let remaining = remote.remaining, remaining > 0 {
            total = offset + remaining
        } else if bodyEnded {
            total = offset
        } else {
            return .restart("the server did not say how much of the file follows offset \(offset)")
        }
        guard let recordedSize, total == recordedSize else {
            return .restart("the remote file's size changed from \(recordedSize.map(String.init) ?? "unknown") to \(total)")
        }
        return bodyEnded && total == offset ? .alreadyComplete : .write(at: offset, total: total)
    }

    /// Whether a libcurl failure on a resumed FTP or SFTP request means the partial data does
    /// not fit the remote file (it shrank below the offset, or the server cannot seek).
    static func isUnusableOffset(_ code: CURLcode) -> Bool {
        code == CURLE_BAD_DOWNLOAD_RESUME || code == CURLE_FTP_COULDNT_USE_REST || code == CURLE_RANGE_ERROR
    }
}
