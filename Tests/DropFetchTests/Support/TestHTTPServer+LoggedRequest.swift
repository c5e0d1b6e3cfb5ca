extension TestHTTPServer {
    /// An IPv4 socket address as the server saw it (getpeername/getsockname).
    struct Address: Sendable, Equatable, CustomStringConvertible {
        let host: String
        let port: Int

        var description: String { "\(host):\(port)" }
    }

    /// One request the server read, with what it answered; tests inspect these after a run.
    ///
    /// The entry is logged as soon as the request head is parsed, then updated while the answer
    /// is sent: `status` is 0 until the status line is chosen and `finished` is nil until the
    /// answer is complete or abandoned. Use `TestHTTPServer.completedRequests(timeout:)` to read
    /// the log once every answer is done.
    struct LoggedRequest: Sendable, CustomStringConvertible {
        /// Position in arrival order over the server's lifetime, from 1.
        let id: Int
        /// Which accepted connection carried the request, from 1; equal ids mean keep-alive reuse.
        let connectionID: Int
        let method: String
        /// The request target exactly as sent, query included.
        let target: String
        /// The target without its query.
        let path: String
        let version: String
        /// All header fields in the order received, names as sent.
        let headers: [(name: String, value: String)]
        /// The client's end of the connection.
        let peer: Address
        /// The server's end of the connection (the address the listener was bound to).
        let local: Address
        let received: ContinuousClock.Instant
        /// The status code sent, or 0 while none has been chosen (or none was sent).
        var status: Int = 0
        /// Body bytes written to the socket for this answer (chunk framing not counted).
        var bodyBytesSent: Int = 0
        var finished: ContinuousClock.Instant?

        var isFinished: Bool { finished != nil }

        /// The first value of header `name`, compared case-insensitively (RFC 9110 §5.1).
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// Every value of header `name`, compared case-insensitively.
        func headers(named name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        }

        var description: String {
            "#\(id) conn \(connectionID) \(method) \(target) → \(status), \(bodyBytesSent) body bytes"
        }
    }
}
