@testable import DropFetch
import Foundation

extension TestHTTPServer {
    /// Answers one request on a connection thread: applies the path's faults, writes the status
    /// line, headers and body (RFC 9112), and records what was sent in the request log.
    struct Exchange {
        let engine: Engine
        let fd: Int32
        let head: RequestHead
        let requestID: Int
        private var plan = FaultPlan()
        private var countedInFlight = true

        init(engine: Engine, fd: Int32, head: RequestHead, requestID: Int) {
            self.engine = engine
            self.fd = fd
            self.head = head
            self.requestID = requestID
        }

        /// Sends the answer; returns whether the connection may carry another request.
        mutating func answer() -> Bool {
            let head = self.head
            let (plan, file) = engine.state.withLock { state in
                state.takePlan(for: state.key(target: head.target, path: head.path))
            }
            self.plan = plan
            if let delay = plan.delay, !pause(delay) { return false }
            guard head.method == "GET" || head.method == "HEAD" else {
                return sendPage(status: 405, headers: [("Allow", "GET, HEAD")], body: Self.page(405))
            }
            switch plan.replacement {
            case .status(let code, let headers, let body):
                return sendPage(status: code, headers: headers, body: Array(body.utf8))
            case .redirect(let location, let code):
                return sendPage(status: code, headers: [("Location", location)], body: Self.page(code))
            case .endlessBody:
                return sendEndlessBody()
            case .lyingContentLength(let length):
                return sendShortBody(claiming: length, of: file?.body ?? Self.pattern)
            default:
                guard let file else { return sendPage(status: 404, headers: [], body: Self.page(404)) }
                return sendFile(file)
            }
        }

        private mutating func sendFile(_ file: ServedFile) -> Bool {
            let size = file.body.count
            let answer = plan.ignoreRange || plan.contentRangeOn200
                ? RangeAnswer.full
                : RangeAnswer.decide(range: head.header("Range"), ifRange: head.header("If-Range"),
                                     size: size, etag: file.etag, lastModified: file.lastModified)
            var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
            if let etag = file.etag { headers.append(("ETag", etag)) }
            if let lastModified = file.lastModified { headers.append(("Last-Modified", lastModified)) }
            switch answer {
            case .full:
                if plan.contentRangeOn200 {
                    let start = min(RangeAnswer.requestedStart(head.header("Range")), max(0, size - 1))
                    headers.append(("Content-Range", size == 0 ? "bytes */0" : "bytes \(start)-\(size - 1)/\(size)"))
                }
                return send(status: 200, headers: headers, body: file.body[...])
            case .partial(let first, let last):
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
                return send(status: 206, headers: headers, body: file.body[first...last])
            case .unsatisfiable:
                headers[0] = ("Content-Type", "text/html; charset=utf-8")
                headers.append(("Content-Range", "bytes */\(size)"))
                return send(status: 416, headers: headers, body: Self.page(416)[...])
            }
        }

        private mutating func sendPage(status: Int, headers: [(String, String)], body: [UInt8]) -> Bool {
            send(status: status, headers: [("Content-Type", "text/html; charset=utf-8")] + headers, body: body[...])
        }

        /// Writes a complete answer with Content-Length; `headers` replace defaults of the same name.
        private mutating func send(status: Int, headers: [(String, String)], body: ArraySlice<UInt8>) -> Bool {
            let closing = head.closesConnection || plan.dropAfter != nil
            let limit = head.method == "HEAD" ? 0 : min(body.count, plan.dropAfter ?? body.count)
            guard sendHead(status: status, headers: [("Content-Length", "\(body.count)")] + headers,
                           closing: closing, isLastWrite: limit == 0)
            else { return false }
            return sendBody(body, limit: limit) && !closing
        }

        /// A chunked 200 (RFC 9112 §7.1) whose last chunk never comes.
        private mutating func sendEndlessBody() -> Bool {
            let headers = [("Content-Type", "application/octet-stream"), ("Transfer-Encoding", "chunked")]
            guard sendHead(status: 200, headers: headers, closing: false), head.method != "HEAD" else { return false }
            let size = min(plan.drip?.bytesPerChunk ?? Self.pattern.count, Self.pattern.count)
            let limit = plan.dropAfter ?? Int.max
            let doubled = Self.pattern + Self.pattern
            var sent = 0
            while sent < limit, !engine.isStopped {
                let count = min(size, limit - sent)
                let start = sent % Self.pattern.count
                let frame = Array(String(count, radix: 16).utf8) + [13, 10] + doubled[start..<start + count] + [13, 10]
                guard write(frame) else { return false }
                sent += count
                record(bodyBytes: count)
                if let drip = plan.drip, !pause(drip.interval) { return false }
            }
            return false
        }

        /// Announces `length` bytes, sends fewer, then closes.
        private mutating func sendShortBody(claiming length: Int64, of body: [UInt8]) -> Bool {
            let headers = [("Content-Type", "application/octet-stream"), ("Content-Length", "\(length)")]
            guard sendHead(status: 200, headers: headers, closing: false), head.method != "HEAD" else { return false }
            let count = Int(clamping: max(0, min(Int64(body.count), length - 1)))
            _ = sendBody(body[..<count], limit: min(count, plan.dropAfter ?? count))
            return false
        }

        private mutating func sendHead(status: Int, headers: [(String, String)], closing: Bool, isLastWrite: Bool = false) -> Bool {
            var merged: [(String, String)] = []
            for (name, value) in headers {
                merged.removeAll { $0.0.lowercased() == name.lowercased() }
                merged.append((name, value))
            }
            if closing { merged.append(("Connection", "close")) }
            var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
            for (name, value) in merged { text += "\(name): \(value)\r\n" }
            text += "\r\n"
            engine.state.withLock { state in state.update(requestID) { $0.status = status } }
            if isLastWrite { leaveInFlight() }
            return write(Array(text.utf8))
        }

        /// Sends the first `limit` bytes of `body`, in drip-sized chunks with pauses when dripping.
        private mutating func sendBody(_ body: ArraySlice<UInt8>, limit: Int) -> Bool {
            let end = body.startIndex + min(limit, body.count)
            let chunk = plan.drip?.bytesPerChunk ?? 64 * 1024
            var offset = body.startIndex
            while offset < end {
                let next = min(end, offset + chunk)
                if next == end { leaveInFlight() }
                guard write(body[offset..<next]) else { return false }
                record(bodyBytes: next - offset)
                offset = next
                if let drip = plan.drip, offset < end, !pause(drip.interval) { return false }
            }
            return true
        }

        /// Stops counting this request in `maxConcurrentRequests`; called before the last write of a
        /// complete answer, because a client may start its next request as soon as that write lands.
        mutating func leaveInFlight() {
            guard countedInFlight else { return }
            countedInFlight = false
            engine.state.withLock { $0.leaveInFlight() }
        }

        private func write(_ bytes: some ContiguousBytes) -> Bool {
            guard !engine.isStopped else { return false }
            return (try? bytes.withUnsafeBytes { try Socket.sendAll(fd, $0) }) != nil
        }

        private func record(bodyBytes: Int) {
            engine.state.withLock { state in state.update(requestID) { $0.bodyBytesSent += bodyBytes } }
        }

        /// Waits `duration`; false when `stop()` or the client hung up meanwhile.
        private func pause(_ duration: Duration) -> Bool {
            Socket.wait(for: duration, wake: engine.wakeRead, peer: fd) == .elapsed
        }

        /// A minimal answer for a request that could not be parsed; the connection then closes.
        static func sendBare(status: Int, fd: Int32) {
            let text = "HTTP/1.1 \(status) \(reason(status))\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            _ = try? Array(text.utf8).withUnsafeBytes { try Socket.sendAll(fd, $0) }
        }

        /// Filler for bodies that have no file behind them: the bytes 0...255 repeated, 16 KiB.
        static let pattern: [UInt8] = (0..<16 * 1024).map { UInt8(truncatingIfNeeded: $0) }

        static func page(_ status: Int) -> [UInt8] {
            Array("<html><body><h1>\(status) \(reason(status))</h1></body></html>\n".utf8)
        }

        static func reason(_ status: Int) -> String {
            let reasons = [
                200: "OK", 206: "Partial Content", 301: "Moved Permanently", 302: "Found", 303: "See Other",
                307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized",
                403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
                410: "Gone", 416: "Range Not Satisfiable", 429: "Too Many Requests",
                431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
                502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
            ]
            return reasons[status] ?? "Status \(status)"
        }
    }
}
