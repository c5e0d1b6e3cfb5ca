/// What to do with a response before any of its body is written (docs/architecture.md, RFC 9110 §14).
enum ResumeDecision: Sendable, Equatable {
    /// Write the body starting at this file offset (0 = truncate and start over).
    case write(at: Int64, total: Int64?)
    /// A 416 whose `bytes */N` equals the local size: the data is already complete.
    case alreadyComplete
    /// The partial data cannot be continued: drop it and request the whole file again.
    case restart(String)
    /// The response is an error: discard its body and fail with this.
    case fail(Failure)

    /// Decides from the final response's status and headers against what is on disk.
    /// - Parameters:
    ///   - offset: the `Range` start that was requested (0 when none).
    ///   - recordedTotal: the full size the resume record remembers, if any.
    ///   - validatorMatches: whether the response's ETag (or Last-Modified) equals the record's:
    ///     a `206` of another version is never appended.
    static func decide(status: Int, contentRange: String?, contentLength: Int64?,
                       offset: Int64, recordedTotal: Int64?, validatorMatches: Bool = true) -> ResumeDecision {
        switch status {
        case 200:
            return .write(at: 0, total: contentLength)
        case 206:
            guard offset > 0 else {
                return .restart("206 Partial Content to a request without Range")
            }
            guard validatorMatches else {
                return .restart("206 for another version of the file (its validator differs from the record's)")
            }
            guard let header = contentRange, let range = ContentRange(header), let first = range.first else {
                return .restart("206 without a valid Content-Range")
            }
            guard first == offset else {
                return .restart("Content-Range starts at \(first), local data ends at \(offset)")
            }
            if let recordedTotal, let complete = range.complete, complete != recordedTotal {
                return .restart("size changed from \(recordedTotal) to \(complete)")
            }
            guard let complete = range.complete, let last = range.last, last == complete - 1 else {
                return .restart("Content-Range \(header) does not run to the end of the file")
            }
            return .write(at: offset, total: complete)
        case 416:
            if offset > 0, let header = contentRange, let range = ContentRange(header),
               range.first == nil, range.complete == offset,
               recordedTotal == nil || recordedTotal == offset {
                return .alreadyComplete
            }
            if offset > 0 { return .restart("416 Range Not Satisfiable for offset \(offset)") }
            return .fail(Failure(.httpStatus, "HTTP 416"))
        case 201...299:
            if offset > 0 { return .restart("HTTP \(status) to a Range request") }
            return .write(at: 0, total: contentLength)
        default:
            return .fail(Failure(.httpStatus, "HTTP \(status)"))
        }
    }
}
