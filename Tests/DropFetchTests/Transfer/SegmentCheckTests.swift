import Testing
@testable import DropFetch

/// Issue 26: a download is split only with a strong validator and range support, and a segment's
/// response is written only when it is exactly the range asked for, of the same file.
@Suite("Segment checks")
struct SegmentCheckTests {
    static let etag = "\"v1\""
    static let segment = SegmentPlan.Segment(id: 1, start: 100, next: 100, end: 200)

    @Test("strong validators: an ETag that is not weak, or a Last-Modified 60 s older than Date")
    func strongValidator() {
        #expect(SegmentCheck.strongValidator(etag: Self.etag, lastModified: nil, date: nil) == Self.etag)
        #expect(SegmentCheck.strongValidator(etag: "W/\"v1\"", lastModified: nil, date: nil) == nil)
        let modified = "Tue, 24 Nov 2026 10:00:00 GMT"
        #expect(SegmentCheck.strongValidator(etag: nil, lastModified: modified,
                                             date: "Tue, 24 Nov 2026 10:01:00 GMT") == modified)
        #expect(SegmentCheck.strongValidator(etag: nil, lastModified: modified,
                                             date: "Tue, 24 Nov 2026 10:00:59 GMT") == nil)
        #expect(SegmentCheck.strongValidator(etag: nil, lastModified: modified, date: nil) == nil)
        #expect(SegmentCheck.strongValidator(etag: nil, lastModified: "yesterday", date: "Tue, 24 Nov 2026 10:01:00 GMT") == nil)
    }

    @Test("splitting needs connections, a size, a validator, ranges and twice min_size left")
    func maySplit() {
        let ok = SegmentCheck.FirstResponse(status: 200, total: 1000, acceptRanges: "bytes", validator: Self.etag)
        #expect(SegmentCheck.maySplit(ok, written: 0, connections: 2, minSize: 500))
        #expect(!SegmentCheck.maySplit(ok, written: 1, connections: 2, minSize: 500))
        #expect(!SegmentCheck.maySplit(ok, written: 0, connections: 1, minSize: 1))
        var response = ok
        response.total = nil
        #expect(!SegmentCheck.maySplit(response, written: 0, connections: 8, minSize: 1))
        response = ok
        response.validator = nil
        #expect(!SegmentCheck.maySplit(response, written: 0, connections: 8, minSize: 1))
        response = ok
        response.acceptRanges = "none"
        #expect(!SegmentCheck.maySplit(response, written: 0, connections: 8, minSize: 1))
        response.status = 206
        #expect(SegmentCheck.maySplit(response, written: 0, connections: 8, minSize: 1))
    }

    @Test("a segment's response is refused unless it is the 206 of exactly its range, size and version", arguments: [
        (206, "bytes 100-199/1000", etag, nil as String?),
        (200, nil, etag, "HTTP 200 to a segment's Range request"),
        (206, "bytes 100-299/1000", etag, "Content-Range 100-299 is not the segment's 100-199"),
        (206, "bytes 99-199/1000", etag, "Content-Range 99-199 is not the segment's 100-199"),
        (206, "bytes 100-199/1001", etag, "the file's size changed from 1000 to 1001"),
        (206, "bytes 100-199/*", etag, "the file's size changed from 1000 to unknown"),
        (206, "bytes 100-199/1000", "\"v2\"", "another version of the file (its validator differs from the first response's)"),
        (206, "bytes 100-199/1000", nil, "another version of the file (its validator differs from the first response's)"),
        (206, nil, etag, "206 without a valid Content-Range"),
    ] as [(Int, String?, String?, String?)])
    func segmentResponse(_ status: Int, _ contentRange: String?, _ etag: String?, _ refusal: String?) {
        #expect(SegmentCheck.refusal(status: status, contentRange: contentRange, etag: etag, lastModified: nil,
                                     segment: Self.segment, total: 1000, validator: Self.etag) == refusal)
    }

    @Test("with a Last-Modified validator the response's Last-Modified must equal it")
    func lastModifiedValidator() {
        let modified = "Tue, 24 Nov 2026 10:00:00 GMT"
        #expect(SegmentCheck.refusal(status: 206, contentRange: "bytes 100-199/1000", etag: nil, lastModified: modified,
                                     segment: Self.segment, total: 1000, validator: modified) == nil)
        #expect(SegmentCheck.refusal(status: 206, contentRange: "bytes 100-199/1000", etag: nil,
                                     lastModified: "Tue, 24 Nov 2026 10:05:00 GMT",
                                     segment: Self.segment, total: 1000, validator: modified) != nil)
    }
}
