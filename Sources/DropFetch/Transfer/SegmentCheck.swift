import CCurl

/// The checks of a segmented download (issue 26) that need no connection: whether a response
/// allows splitting at all, and whether a segment's response may be written.
enum SegmentCheck {
    /// A Last-Modified must be this much older than the response's Date to be a strong validator
    /// (RFC 9110 §8.8.2.2: a file changed within the same second would keep its date).
    static let lastModifiedAge: Int64 = 60

    /// The strong validator of a response, as `If-Range` sends it: an ETag that is not weak (`W/`),
    /// else a Last-Modified at least 60 s older than Date (both parsed by curl_getdate(3)); nil when
    /// nothing proves two responses carry the same file, and the download must not be split.
    static func strongValidator(etag: String?, lastModified: String?, date: String?) -> String? {
        if let etag = etag?.trimmingWhitespace(), !etag.isEmpty, !etag.hasPrefix("W/") { return etag }
        guard let lastModified = lastModified?.trimmingWhitespace(), let date,
              let modified = httpDate(lastModified), let sent = httpDate(date),
              sent - modified >= lastModifiedAge else { return nil }
        return lastModified
    }

    /// Seconds since the epoch of an HTTP-date (RFC 9110 §5.6.7), nil when unparsable.
    static func httpDate(_ text: String) -> Int64? {
        let seconds = curl_getdate(text, nil)
        return seconds < 0 ? nil : Int64(seconds)
    }

    /// What the first response must show before more connections are opened.
    struct FirstResponse: Sendable, Equatable {
        var status: Int
        /// The complete size: Content-Length of a 200, the Content-Range total of a 206.
        var total: Int64?
        var acceptRanges: String?
        var validator: String?
    }

    /// Whether a download may open more connections: more than one allowed, the size known, a
    /// strong validator, ranges supported (`Accept-Ranges: bytes` or a 206), and at least twice
    /// `minSize` left after `written` bytes.
    static func maySplit(_ response: FirstResponse, written: Int64, connections: Int, minSize: Int64) -> Bool {
        guard connections > 1, let total = response.total, response.validator != nil else { return false }
        let ranges = response.status == 206
            || response.acceptRanges?.trimmingWhitespace().lowercased() == "bytes"
        return ranges && total - written >= 2 * minSize
    }

    /// Why a segment's response cannot be written; nil when it is exactly the range asked for,
    /// of the same file: a 206 whose Content-Range is the segment's first and last byte and the
    /// file's size, and whose validator equals the one the download started with.
    static func refusal(status: Int, contentRange: String?, etag: String?, lastModified: String?,
                        segment: SegmentPlan.Segment, total: Int64, validator: String) -> String? {
        guard status == 206 else { return "HTTP \(status) to a segment's Range request" }
        guard let header = contentRange, let range = ContentRange(header), let first = range.first,
              let last = range.last else {
            return "206 without a valid Content-Range"
        }
        guard first == segment.next, last == segment.end - 1 else {
            return "Content-Range \(first)-\(last) is not the segment's \(segment.rangeHeader)"
        }
        guard range.complete == total else {
            return "the file's size changed from \(total) to \(range.complete.map(String.init) ?? "unknown")"
        }
        let shown = validator.hasPrefix("\"") || validator.hasPrefix("W/") ? etag : lastModified
        guard shown?.trimmingWhitespace() == validator else {
            return "another version of the file (its validator differs from the first response's)"
        }
        return nil
    }
}
