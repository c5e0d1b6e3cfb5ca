import CCurl

/// The bytes one extra connection of a segmented download owns (issue 26), shared between the
/// transfer that writes them and the plan that may shrink `end` when another segment steals the back.
final class SegmentWindow {
    let id: Int
    /// The first byte asked for.
    let start: Int64
    /// One past the last byte asked for: the `Range` end, which the response must match.
    let requestedEnd: Int64
    /// One past the last byte this segment may write; only ever shrinks, never below `next`.
    var end: Int64
    /// The next byte to write.
    private(set) var next: Int64
    /// The complete size of the file, which the response's Content-Range must name.
    let total: Int64
    /// The strong validator of the first response, sent as `If-Range` and required of the answer.
    let validator: String
    /// Called after each write with the range just written, for the piece map.
    var wrote: ((PieceMap.Range) -> Void)?
    /// Start of the bytes not yet handed to the kernel's writeback (PartFile.startWriteback).
    var writebackStart: Int64

    init(id: Int, start: Int64, end: Int64, total: Int64, validator: String) {
        self.id = id
        self.start = start
        requestedEnd = end
        self.end = end
        next = start
        writebackStart = start
        self.total = total
        self.validator = validator
    }

    /// The `Range` header value: inclusive bounds (RFC 9110 §14.1.2).
    var rangeHeader: String { "\(start)-\(requestedEnd - 1)" }
    /// The segment as requested, for `SegmentCheck`.
    var requested: SegmentPlan.Segment { SegmentPlan.Segment(id: id, start: start, next: start, end: requestedEnd) }
    var isComplete: Bool { next >= end }

    func advance(by count: Int64) {
        wrote?(PieceMap.Range(next, next + count))
        next += count
    }
}

extension Transfer {
    /// Checks a segment's response before a byte of it is written (`SegmentCheck.refusal`): an
    /// error status fails only this segment; any other answer that is not exactly the range asked
    /// for, of the same file, is a restart (the other segments must stop: the file may have changed).
    func decideSegment(status: Int, _ segment: SegmentWindow) -> Bool {
        if status >= 400 {
            state = .failed(Failure(.httpStatus, "HTTP \(status)"))
            return false
        }
        if let refusal = SegmentCheck.refusal(
            status: status, contentRange: response(header: .contentRange), etag: response(header: .etag),
            lastModified: response(header: .lastModified), segment: segment.requested, total: segment.total,
            validator: segment.validator) {
            state = .restarting(refusal)
            return false
        }
        state = .writing
        return true
    }

    /// Writes a segment's body at its offset (pwrite(2)), never past the segment's current end;
    /// reaching the end stops the transfer (the rest belongs to another segment).
    func receiveSegmentBody(_ data: UnsafeRawBufferPointer, _ segment: SegmentWindow) -> Bool {
        guard case .writing = state else { return false }
        let count = Int(min(Int64(data.count), max(0, segment.end - segment.next)))
        if count > 0 {
            do {
                try part.file.write(UnsafeRawBufferPointer(rebasing: data.prefix(count)), at: segment.next)
            } catch {
                state = .failed(Failure(error.isNoSpace ? .noSpace : .internal, error.description))
                return false
            }
            segment.advance(by: Int64(count))
            if segment.next - segment.writebackStart >= PartFile.writebackChunk {
                part.startWriteback(from: segment.writebackStart, to: segment.next)
                segment.writebackStart = segment.next
            }
            crashPlan?.reach(.midSegment)
        }
        if segment.isComplete {
            state = .segmentComplete
            return false
        }
        return true
    }

    /// A segment's outcome where it differs from a whole download's: complete once its bytes are
    /// written (libcurl then reports the write callback's stop), short when the body ended early.
    /// Nil leaves a libcurl error to `finish`'s usual classification.
    func finishSegment(_ code: CURLcode, _ segment: SegmentWindow) -> TransferOutcome? {
        let written = segment.next - segment.start
        switch state {
        case .segmentComplete:
            return .completed(TransferResult(bytes: written, sha256: nil, httpStatus: 206, resumedFrom: segment.start))
        case .restarting(let reason):
            return .restart(reason: reason)
        case .writing where code == CURLE_OK:
            if segment.isComplete {
                return .completed(TransferResult(bytes: written, sha256: nil, httpStatus: 206, resumedFrom: segment.start))
            }
            return .failed(TransferFailure(failure: Failure(.network, "short segment: \(written) of \(segment.requestedEnd - segment.start) bytes"),
                                           httpStatus: 206, retryAfter: nil, bytes: written, resumedFrom: segment.start))
        case .awaitingResponse where code == CURLE_OK:
            let status = easy.info(long: CURLINFO_RESPONSE_CODE)
            guard decideSegment(status: status, segment) else { return finishSegment(code, segment) }
            return finishSegment(code, segment)
        default:
            return nil
        }
    }
}
