// libFuzzer target for the response-header checks (RFC 9110 §14, §10.2.3); compiled together with
// Sources/DropFetch by Fuzz/run.sh. The input is a header block as libcurl's CURLOPT_HEADERFUNCTION
// hands it over line by line; `X-Fuzz-Offset` and `X-Fuzz-Recorded` pick the local resume state.

/// Stops the run with `message`: libFuzzer records the input as a crash.
func violated(_ message: String) -> Never {
    fatalError("invariant violated: \(message)")
}

/// Parses `value` and checks `first <= last < complete` for what it accepts.
func checkContentRange(_ value: String) -> ContentRange? {
    guard let range = ContentRange(value) else { return nil }
    switch (range.first, range.last, range.complete) {
    case let (first?, last?, complete):
        if first < 0 || last < first { violated("Content-Range \(value.debugDescription): first \(first), last \(last)") }
        if let complete, last >= complete {
            violated("Content-Range \(value.debugDescription): last \(last) >= complete \(complete)")
        }
    case (nil, nil, let complete?):
        if complete < 0 { violated("Content-Range \(value.debugDescription): complete \(complete)") }
    default:
        violated("Content-Range \(value.debugDescription) parsed to \(range)")
    }
    return range
}

/// Checks ``ResumeDecision/decide(status:contentRange:contentLength:offset:recordedTotal:)`` for one local state.
func checkDecision(_ headers: ResponseHeaders, offset: Int64, recordedTotal: Int64?) {
    let contentRange = headers["content-range"]
    let contentLength = headers["content-length"].flatMap { Int64($0.trimmingWhitespace()) }
    let decision = ResumeDecision.decide(status: headers.status, contentRange: contentRange,
                                         contentLength: contentLength, offset: offset, recordedTotal: recordedTotal)
    let state = "status \(headers.status), Content-Range \(contentRange.debugDescription), offset \(offset)"
        + ", recorded \(recordedTotal.map(String.init) ?? "nil")"
    switch decision {
    case .write(let at, let total):
        if at != 0 && at != offset { violated("write(at: \(at)) for \(state)") }
        if at != 0 {
            let range = contentRange.flatMap(ContentRange.init)
            if headers.status != 206 || range?.first != offset || range?.complete != total {
                violated("write(at: \(at), total: \(total.map(String.init) ?? "nil")) for \(state)")
            }
        }
    case .alreadyComplete:
        if headers.status != 416 || offset <= 0 { violated("alreadyComplete for \(state)") }
    case .restart, .fail:
        break
    }
}

/// Runs every check on one complete response, as the transfer does at the header block's blank line.
func checkResponse(_ headers: ResponseHeaders) {
    _ = headers.isFinal(following: true)
    _ = headers.isFinal(following: false)
    // Retry-After is parsed by libcurl (CURLINFO_RETRY_AFTER); the agent only caps its seconds.
    if let value = headers["retry-after"], let seconds = Int64(value.prefix(19)),
       let retryAfter = RetryAfter.capped(seconds: seconds) {
        if retryAfter < .zero { violated("negative Retry-After \(retryAfter)") }
        _ = Backoff.delay(attempt: 1, policy: Config.Retry(), retryAfter: retryAfter, jitter: 0.5)
    }
    if let value = headers["content-disposition"], let name = FileName.fromContentDisposition(value),
       let problem = FileName.validate(name) {
        violated("Content-Disposition \(value.debugDescription) gave \(name.debugDescription), which \(problem)")
    }
    let range = headers["content-range"].flatMap(checkContentRange)
    let length = headers["content-length"].flatMap { Int64($0.trimmingWhitespace()) }
    let chosenOffset = headers["x-fuzz-offset"].flatMap { Int64($0) }
    let chosenTotal = headers["x-fuzz-recorded"].flatMap { Int64($0) }
    let offsets = Set([0, 1, range?.first, range?.complete, chosenOffset].compactMap { $0 })
    let totals: [Int64?] = [nil, range?.complete, length, chosenTotal]
    for offset in offsets {
        for total in totals { checkDecision(headers, offset: offset, recordedTotal: total) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var headers = ResponseHeaders()
    var pending = false
    var start = 0
    while start < bytes.count {
        let end = bytes[start...].firstIndex(of: 0x0A).map { $0 + 1 } ?? bytes.count
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        start = end
        if text.hasPrefix("HTTP/") {
            headers = ResponseHeaders(statusLine: text)
            pending = true
        } else if text == "\r\n" || text == "\n" {
            checkResponse(headers)
            pending = false
        } else {
            headers.add(text)
            pending = true
            if let colon = text.firstIndex(of: ":") {
                let value = String(text[text.index(after: colon)...])
                _ = checkContentRange(value)
                // libcurl parses Retry-After's HTTP-date itself (CURLINFO_RETRY_AFTER); its seconds are capped here.
                if let seconds = Int64(value.trimmingWhitespace()), let delay = RetryAfter.capped(seconds: seconds),
                   delay > .seconds(RetryAfter.maxSeconds) {
                    violated("Retry-After \(seconds) gave \(delay), over the cap")
                }
            }
        }
    }
    if pending { checkResponse(headers) }
    return 0
}
