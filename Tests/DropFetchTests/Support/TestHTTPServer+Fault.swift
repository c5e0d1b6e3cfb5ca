extension TestHTTPServer {
    /// A misbehaviour injected into the answers for one path.
    ///
    /// Several faults combine: `delay`, `drip`, `dropAfter`, `ignoreRange` and `contentRangeOn200`
    /// modify the answer; `status`, `redirect`, `endlessBody` and `lyingContentLength` replace it
    /// (the first of those in the list wins). Wrap a fault in `.times(n, fault)` to apply it to the
    /// next `n` requests for the path only.
    enum Fault: Sendable {
        /// Send the headers with the full Content-Length, then close after `bytes` body bytes.
        case dropAfter(bytes: Int)
        /// Answer 200 with the full body whatever the Range header says.
        case ignoreRange
        /// Answer the next request with the current file, then switch the file to a new ETag
        /// (and Last-Modified and body, where given) for all later requests.
        case changeETagAfterFirstRequest(to: String? = "\"v2\"", lastModified: String? = nil, body: [UInt8]? = nil)
        /// Answer `code` with a text/html `body` and extra `headers` (e.g. `Retry-After`).
        case status(code: Int, headers: [(String, String)] = [], body: String = "error page")
        /// Send the body `bytesPerChunk` bytes at a time with `interval` between chunks.
        case drip(bytesPerChunk: Int, interval: Duration)
        /// Answer `code` with `Location: to`, sent exactly as given (absolute or relative).
        case redirect(to: String, code: Int = 302)
        /// Answer 200 with a chunked body that never ends, until the client or `stop()` closes.
        case endlessBody
        /// Announce this Content-Length, send fewer bytes (at most the file), then close.
        case lyingContentLength(Int64)
        /// Answer 200 with the full body plus a `Content-Range` header, as if it were a 206:
        /// `bytes N-(size-1)/size` where N is the start of the requested range, else 0.
        case contentRangeOn200
        /// Wait this long before answering (a slow host); cut short by `stop()` or a client hang-up.
        case delay(Duration)
        /// Apply `Fault` to the next `n` requests for the path only.
        indirect case times(Int, Fault)
    }

    /// A fault installed on a path, with how many more requests it applies to (nil: all).
    struct ArmedFault: Sendable {
        var fault: Fault
        var remaining: Int?

        init(_ fault: Fault) {
            var fault = fault
            var remaining: Int?
            while case .times(let count, let inner) = fault {
                remaining = min(remaining ?? Int.max, max(0, count))
                fault = inner
            }
            self.fault = fault
            self.remaining = remaining
        }
    }

    /// The faults that apply to one request, merged into what the exchange has to do.
    struct FaultPlan {
        var delay: Duration?
        var drip: (bytesPerChunk: Int, interval: Duration)?
        var dropAfter: Int?
        var ignoreRange = false
        var contentRangeOn200 = false
        /// A `status`, `redirect`, `endlessBody` or `lyingContentLength` fault answering instead of the file.
        var replacement: Fault?

        mutating func add(_ fault: Fault) {
            switch fault {
            case .dropAfter(let bytes): dropAfter = max(0, bytes)
            case .ignoreRange: ignoreRange = true
            case .drip(let size, let interval): drip = (max(1, size), interval)
            case .contentRangeOn200: contentRangeOn200 = true
            case .delay(let duration): delay = duration
            case .status, .redirect, .endlessBody, .lyingContentLength:
                if replacement == nil { replacement = fault }
            case .changeETagAfterFirstRequest, .times:
                break  // resolved by `State.takePlan(for:)` and `ArmedFault.init`
            }
        }
    }
}
