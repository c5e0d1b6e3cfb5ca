@testable import DropFetch
import Foundation

/// A bare HTTP/1.1 server on a loopback address whose every answer a test writes by hand, for
/// servers that break the rules `TestHTTPServer` keeps (e.g. a `206` carrying another ETag than
/// the `If-Range` it was asked with). One request per connection (`Connection: close`).
///
///     let server = try ScriptedHTTPServer { head, number in
///         number == 0 ? .file(v1, etag: "\"v1\"", range: nil, dropAfter: 40_000)
///                     : .file(v2, etag: "\"v2\"", range: head.header("Range"))   // If-Range ignored
///     }
///     // … download server.url("/f.bin") …
///     #expect(server.requests.map(\.status) == [200, 206])
final class ScriptedHTTPServer: Sendable {
    /// What to send for one request.
    struct Answer: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        /// Close after this many body bytes (Content-Length still announces the whole body).
        var dropAfter: Int?

        init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], dropAfter: Int? = nil) {
            self.status = status
            self.headers = headers
            self.body = body
            self.dropAfter = dropAfter
        }

        /// `body` as a file with these validators, honouring `range` (one `bytes=N-`, `N-M` or
        /// `-N` range; nil or invalid → 200) with no regard for `If-Range`.
        static func file(_ body: [UInt8], etag: String?, lastModified: String? = nil, range: String?,
                         dropAfter: Int? = nil) -> Answer {
            var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
            if let etag { headers.append(("ETag", etag)) }
            if let lastModified { headers.append(("Last-Modified", lastModified)) }
            switch TestHTTPServer.RangeAnswer.decide(range: range, ifRange: nil, size: body.count, etag: etag,
                                                     lastModified: lastModified) {
            case .full:
                return Answer(status: 200, headers: headers, body: body, dropAfter: dropAfter)
            case .partial(let first, let last):
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(body.count)"))
                return Answer(status: 206, headers: headers, body: Array(body[first...last]), dropAfter: dropAfter)
            case .unsatisfiable:
                headers.append(("Content-Range", "bytes */\(body.count)"))
                return Answer(status: 416, headers: headers)
            }
        }
    }

    /// Decides the answer to a request; `number` counts the requests before it, from 0.
    typealias Script = @Sendable (_ head: TestHTTPServer.RequestHead, _ number: Int) -> Answer

    private struct Shared {
        var log: [TestHTTPServer.LoggedRequest] = []
        var connections: Set<Int32> = []
        var liveThreads = 0
        var stopped = false
    }

    private let shared = Locked(Shared())
    private let listener: Int32
    private let script: Script
    let host: String
    let port: Int
    var baseURL: String { "http://\(host):\(port)" }

    init(host: String = "127.0.0.1", script: @escaping Script) throws {
        listener = try TestHTTPServer.Socket.listen(host: host)
        let address = TestHTTPServer.Socket.localAddress(listener)
        self.host = address.host
        port = address.port
        self.script = script
        shared.withLock { $0.liveThreads += 1 }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "ScriptedHTTPServer accept :\(port)"
        thread.start()
    }

    deinit { stop() }

    func url(_ path: String) -> String { baseURL + path }

    /// Every request so far, in arrival order, with the status sent and body bytes written.
    var requests: [TestHTTPServer.LoggedRequest] { shared.withLock { $0.log } }

    /// Closes the listener and every connection and waits (up to 10 s) for the threads to end.
    func stop() {
        let first = shared.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.stopped = true
            for fd in state.connections { TestHTTPServer.Socket.shutdownBoth(fd) }
            return true
        }
        if first { TestHTTPServer.Socket.shutdownBoth(listener) }
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while shared.withLock({ $0.liveThreads }) > 0, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
    }

    private func acceptLoop() {
        defer { shared.withLock { $0.liveThreads -= 1; TestHTTPServer.Socket.close(listener) } }
        while !shared.withLock({ $0.stopped }) {
            guard let fd = try? TestHTTPServer.Socket.accept(listener) else { return }
            let accepted = shared.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.connections.insert(fd)
                state.liveThreads += 1
                return true
            }
            guard accepted else { TestHTTPServer.Socket.close(fd); return }
            let thread = Thread { [self] in serve(fd) }
            thread.name = "ScriptedHTTPServer connection"
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            shared.withLock {
                $0.connections.remove(fd)
                TestHTTPServer.Socket.close(fd)
                $0.liveThreads -= 1
            }
        }
        var reader = TestHTTPServer.RequestReader(fd: fd)
        guard case .request(let head) = reader.next() else { return }
        let peer = TestHTTPServer.Socket.peerAddress(fd)
        let local = TestHTTPServer.Socket.localAddress(fd)
        let number = shared.withLock { state -> Int in
            state.log.append(TestHTTPServer.LoggedRequest(
                id: state.log.count + 1, connectionID: state.log.count + 1, method: head.method, target: head.target,
                path: head.path, version: head.version, headers: head.headers, peer: peer, local: local, received: .now))
            return state.log.count - 1
        }
        let answer = script(head, number)
        var text = "HTTP/1.1 \(answer.status) \(TestHTTPServer.Exchange.reason(answer.status))\r\n"
        text += "Content-Length: \(answer.body.count)\r\nConnection: close\r\n"
        for (name, value) in answer.headers where name.lowercased() != "content-length" { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        let limit = head.method == "HEAD" ? 0 : min(answer.body.count, answer.dropAfter ?? answer.body.count)
        var sent = 0
        do {
            try Array(text.utf8).withUnsafeBytes { try TestHTTPServer.Socket.sendAll(fd, $0) }
            try answer.body[..<limit].withUnsafeBytes { try TestHTTPServer.Socket.sendAll(fd, $0) }
            sent = limit
        } catch {}
        shared.withLock { state in
            state.log[number].status = answer.status
            state.log[number].bodyBytesSent = sent
            state.log[number].finished = .now
        }
    }
}
