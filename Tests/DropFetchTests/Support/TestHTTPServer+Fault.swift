extension TestHTTPServer {
    /// A misbehaviour injected into the answers for one path.
    ///
    /// Several faults combine: `delay`, `drip` and `dropAfter` modify any answer; `ignoreRange`,
    /// `contentRangeOn200` and `changeETagAfterFirstRequest` modify an answer from the file;
    /// `status`, `redirect`, `endlessBody` and `lyingContentLength` replace it, the first of
    /// them in the list winning. Wrap a fault in `.times(n, fault)` to apply it to `n` requests
    /// only: a count is spent only when the fault takes effect, so
    /// `[.times(1, .status(code: 503)), .times(1, .lyingContentLength(N))]` answers 503, then a
    /// short body, then the file, while `[.times(1, .dropAfter(bytes: N)), .times(1, .ignoreRange)]`
    /// both apply to the first request.
    enum Fault: Sendable {
        /// Send the headers with the full Content-Length, then close after `bytes` body bytes.
        case dropAfter(bytes: Int)
        /// Answer 200 with the full body whatever the Range header says.
        case ignoreRange
        /// Answer the next request served from the file with the current file, then switch the
        /// file to a new ETag (and Last-Modified and body, where given) for all later requests.
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
        /// Apply `Fault` to `n` requests for the path only (those it takes effect on).
        indirect case times(Int, Fault)

        var role: FaultRole {
            switch self {
            case .delay, .drip, .dropAfter: .modifier
            case .ignoreRange, .contentRangeOn200, .changeETagAfterFirstRequest: .fileOnly
            case .status, .redirect, .endlessBody, .lyingContentLength: .replacement
            case .times(_, let inner): inner.role
            }
        }
    }

    /// How a fault takes part in an answer, which decides when a `.times` count is spent.
    enum FaultRole { case modifier, fileOnly, replacement }

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
