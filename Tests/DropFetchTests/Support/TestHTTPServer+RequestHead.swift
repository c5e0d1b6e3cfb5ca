import Foundation

extension TestHTTPServer {
    /// The request line and header fields of one HTTP/1.1 request (RFC 9112 §3, §5).
    struct RequestHead: Sendable {
        let method: String
        let target: String
        let path: String
        let version: String
        let headers: [(name: String, value: String)]

        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// Whether the connection ends after this exchange (RFC 9112 §9.3): `Connection: close`,
        /// or HTTP/1.0 without `Connection: keep-alive`.
        var closesConnection: Bool {
            let tokens = headers.filter { $0.name.lowercased() == "connection" }
                .flatMap { $0.value.lowercased().split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if tokens.contains("close") { return true }
            return version == "HTTP/1.0" && !tokens.contains("keep-alive")
        }

        /// Parses the head (without its blank line); nil when the request line is malformed.
        static func parse(_ bytes: ArraySlice<UInt8>) -> RequestHead? {
            // Split bytes, not a String: Swift treats "\r\n" as one Character.
            var lines = bytes.split(separator: 10, omittingEmptySubsequences: false)
                .map { Substring(decoding: $0.last == 13 ? $0.dropLast() : $0, as: UTF8.self) }
            while lines.first?.isEmpty == true { lines.removeFirst() }  // RFC 9112 §2.2 leading CRLFs
            guard let requestLine = lines.first else { return nil }
            let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
            var headers: [(name: String, value: String)] = []
            for line in lines.dropFirst() where !line.isEmpty {
                guard let colon = line.firstIndex(of: ":") else { return nil }
                let name = String(line[..<colon])
                guard !name.isEmpty, !name.contains(" ") else { return nil }
                headers.append((name, line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            let target = String(parts[1])
            let path = String(target.prefix { $0 != "?" })
            return RequestHead(method: String(parts[0]), target: target, path: path,
                               version: String(parts[2]), headers: headers)
        }
    }

    /// Reads request heads from a connection, keeping bytes of a pipelined next request.
    struct RequestReader {
        enum Outcome {
            case request(RequestHead)
            /// The peer closed (or the server is stopping) between requests.
            case closed
            /// The bytes are not an HTTP/1.1 request this server can take; answer `status`, then close.
            case malformed(status: Int)
        }

        static let maxHeadSize = 64 * 1024
        let fd: Int32
        private var buffer: [UInt8] = []

        init(fd: Int32) { self.fd = fd }

        mutating func next() -> Outcome {
            var searchFrom = 0
            while true {
                if let end = headEnd(from: searchFrom) {
                    let head = RequestHead.parse(buffer[..<end.start])
                    buffer.removeFirst(end.afterBlankLine)
                    guard let head else { return .malformed(status: 400) }
                    return discardBody(of: head) ?? .request(head)
                }
                if buffer.count > Self.maxHeadSize { return .malformed(status: 431) }
                searchFrom = max(0, buffer.count - 3)
                guard fill() else { return .closed }
            }
        }

        /// Start of the blank line ending the head and the index just past it (CRLFCRLF or LFLF).
        private func headEnd(from start: Int) -> (start: Int, afterBlankLine: Int)? {
            var index = start
            while index + 1 < buffer.count {
                if buffer[index] == 10 {
                    if buffer[index + 1] == 10 { return (index, index + 2) }
                    if index + 2 < buffer.count, buffer[index + 1] == 13, buffer[index + 2] == 10 {
                        return (index, index + 3)
                    }
                }
                index += 1
            }
            return nil
        }

        /// Reads and drops a Content-Length body; a chunked request body is refused.
        private mutating func discardBody(of head: RequestHead) -> Outcome? {
            if head.header("Transfer-Encoding") != nil { return .malformed(status: 501) }
            guard let text = head.header("Content-Length") else { return nil }
            guard var left = Int(text), left >= 0 else { return .malformed(status: 400) }
            while left > 0 {
                if buffer.isEmpty, !fill() { return .closed }
                let taken = min(left, buffer.count)
                buffer.removeFirst(taken)
                left -= taken
            }
            return nil
        }

        /// Appends what recv(2) gives; false at end of stream or on an error.
        private mutating func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            let count = (try? chunk.withUnsafeMutableBytes { try Socket.receive(fd, into: $0) }) ?? 0
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[..<count])
            return true
        }
    }
}
