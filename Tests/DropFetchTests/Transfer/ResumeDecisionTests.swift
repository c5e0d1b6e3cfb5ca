@testable import DropFetch
import Testing

@Suite("Resume decision (header checks before any body byte)")
struct ResumeDecisionTests {
    @Test("200 always means the whole file from 0, also when a range was asked for")
    func fullResponse() {
        #expect(ResumeDecision.decide(status: 200, contentRange: nil, contentLength: 10, offset: 0, recordedTotal: nil)
            == .write(at: 0, total: 10))
        #expect(ResumeDecision.decide(status: 200, contentRange: nil, contentLength: 10, offset: 4, recordedTotal: 10)
            == .write(at: 0, total: 10))
    }

    @Test("206 continuing at the local size to the recorded end is appended")
    func matchingPartial() {
        #expect(ResumeDecision.decide(status: 206, contentRange: "bytes 500-999/1000", contentLength: 500,
                                      offset: 500, recordedTotal: 1000) == .write(at: 500, total: 1000))
    }

    @Test("206 that does not line up with the local data restarts", arguments: [
        ("bytes 400-999/1000", Int64?(1000)),  // wrong start
        ("bytes 500-999/2000", Int64?(1000)),  // size changed
        ("bytes 500-799/1000", Int64?(1000)),  // not to the end
        ("garbage", Int64?(1000)),
        ("bytes 500-999/*", Int64?.none),
    ])
    func mismatchedPartial(range: String, total: Int64?) {
        let decision = ResumeDecision.decide(status: 206, contentRange: range, contentLength: nil, offset: 500,
                                             recordedTotal: total)
        guard case .restart = decision else {
            Issue.record("expected restart for \(range), got \(decision)")
            return
        }
    }

    @Test("416 with bytes */N equal to the local size means complete; otherwise start over")
    func rangeNotSatisfiable() {
        #expect(ResumeDecision.decide(status: 416, contentRange: "bytes */1000", contentLength: nil, offset: 1000,
                                      recordedTotal: 1000) == .alreadyComplete)
        guard case .restart = ResumeDecision.decide(status: 416, contentRange: "bytes */2000", contentLength: nil,
                                                    offset: 1000, recordedTotal: 1000) else {
            Issue.record("a 416 naming another size must restart")
            return
        }
    }

    @Test("error statuses fail with http_status and write nothing", arguments: [404, 500, 503, 429, 403])
    func errorStatus(code: Int) {
        #expect(ResumeDecision.decide(status: code, contentRange: nil, contentLength: 20, offset: 0, recordedTotal: nil)
            == .fail(Failure(.httpStatus, "HTTP \(code)")))
    }

    @Test("Content-Range parsing follows RFC 9110 §14.4")
    func contentRangeParsing() {
        #expect(ContentRange("bytes 0-9/10") == ContentRange(first: 0, last: 9, complete: 10))
        #expect(ContentRange("bytes */10") == ContentRange(first: nil, last: nil, complete: 10))
        #expect(ContentRange("bytes 0-9/*") == ContentRange(first: 0, last: 9, complete: nil))
        #expect(ContentRange("bytes 5-4/10") == nil)
        #expect(ContentRange("bytes 0-10/10") == nil)
        #expect(ContentRange("items 0-1/2") == nil)
        #expect(ContentRange("bytes */*") == nil)
    }

    @Test("the status line gives the status")
    func statusLine() {
        let headers = ResponseHeaders(statusLine: "HTTP/1.1 429 Too Many Requests\r\n")
        #expect(headers.status == 429)
        // HTTP/2 as libcurl hands it over: no reason phrase.
        #expect(ResponseHeaders(statusLine: "HTTP/2 206\r\n").status == 206)
        #expect(ResponseHeaders(statusLine: "HTTP/1.1 2x6 Odd\r\n").status == 0)
        #expect(ResponseHeaders(statusLine: "HTTP/1.1\r\n").status == 0)
    }

    @Test("header names are matched without case, values lose their surrounding blanks, unread headers are not kept")
    func headerLines() {
        var headers = ResponseHeaders(statusLine: "HTTP/1.1 200 OK\r\n")
        #expect(headers[.etag] == nil)
        headers.add("Content-Range: \t bytes 0-9/10 \r\n")
        headers.add("ETAG:\"v1\"\r\n")
        headers.add("Location:\r\n")
        headers.add("X-Powered-By: test\r\n")
        headers.add("etagx: \"v2\"\r\n")
        headers.add("Date-: Mon\r\n")
        headers.add("Last-Modifiex: Mon\r\n")
        headers.add("no colon here\r\n")
        headers.add(": empty name\r\n")
        #expect(headers[.contentRange] == "bytes 0-9/10")
        #expect(headers[.etag] == "\"v1\"")
        #expect(headers[.location] == "")
        #expect(headers[.date] == nil)
        #expect(headers[.lastModified] == nil)
        headers.add("ETag: \"v3\"\r\n")
        #expect(headers[.etag] == "\"v3\"", "a repeated header: the last one counts")
    }

    @Test("every header read is found under its name in any case, and only there", arguments: ResponseHeaders.Name.allCases)
    func everyName(name: ResponseHeaders.Name) {
        let text = name.text.description
        for spelling in [text, text.uppercased(), String(text.prefix(1)).uppercased() + text.dropFirst()] {
            var headers = ResponseHeaders(statusLine: "HTTP/1.1 200 OK\r\n")
            headers.add("\(spelling): value\r\n")
            for other in ResponseHeaders.Name.allCases {
                #expect(headers[other] == (other == name ? "value" : nil), "\(spelling) read as \(other)")
            }
        }
    }
}

/// `Retry-After` is parsed by libcurl (CURLINFO_RETRY_AFTER: delay-seconds or an HTTP-date, 0 for
/// none or a malformed value); the agent only caps it.
@Suite("Retry-After from hostile servers (fuzzer findings)")
struct RetryAfterHardeningTests {
    @Test("huge values are capped at a week and never trap", arguments: [Int64]([
        55_555_555_555_555_555, Int64.max, 7 * 24 * 3600 + 1,
    ]))
    func capped(seconds: Int64) {
        let delay = RetryAfter.capped(seconds: seconds)
        #expect(delay == .seconds(RetryAfter.maxSeconds))
        let backoff = Backoff.delay(attempt: 1, policy: Config.Retry(), retryAfter: delay, jitter: 0.5)
        #expect(backoff <= .seconds(RetryAfter.maxSeconds))
    }

    @Test("none, now, a date already past (libcurl: 0 or negative) → no delay of its own")
    func nothing() {
        #expect(RetryAfter.capped(seconds: 0) == nil)
        #expect(RetryAfter.capped(seconds: -5) == nil)
        #expect(RetryAfter.capped(seconds: 7) == .seconds(7))
    }

    @Test("Duration.milliseconds saturates instead of overflowing")
    func saturating() {
        #expect(Duration.seconds(Int64.max).milliseconds == Int.max)
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
    }
}

/// Status files' times (RFC 3339, UTC): written in place for years 0–9999, by the general path beyond.
@Suite("Timestamps")
struct TimestampTests {
    @Test("format gives RFC 3339 UTC and parse reads it back", arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"), (1_795_039_200, "2026-11-18T22:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"), (253_402_300_799, "9999-12-31T23:59:59Z"),
    ])
    func roundTrip(seconds: Int64, text: String) {
        #expect(Timestamp.format(seconds: seconds) == text)
        #expect(Timestamp.parse(text) == seconds)
    }

    @Test("a year past 9999 is written in full, not cut to four digits")
    func farFuture() {
        #expect(Timestamp.format(seconds: 253_402_300_800) == "10000-01-01T00:00:00Z")
    }
}
