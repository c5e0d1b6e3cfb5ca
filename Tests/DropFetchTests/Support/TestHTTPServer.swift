@testable import DropFetch
import Foundation

/// A real HTTP/1.1 server on a loopback address for end-to-end tests: serves in-memory files with
/// ranges and validators (RFC 9110 §14, §13.1.5), injects faults per path and logs every request.
///
/// One thread accepts, one thread per connection answers, with keep-alive; all shared state is
/// behind a lock (`Locked`). Bind 127.0.0.2 (or any 127/8 address) to stand in for a second host.
///
///     let server = try TestHTTPServer()
///     server.serve("/a.bin", body: TestHTTPServer.randomBytes(100_000),
///                  faults: [.times(1, .dropAfter(bytes: 40_000))])
///     // … download server.url("/a.bin") …
///     #expect(server.completedRequests().map(\.status) == [200, 206])
final class TestHTTPServer: Sendable {
    private let engine: Engine
    /// The address the listener is bound to, e.g. "127.0.0.1".
    let host: String
    /// The port the kernel chose.
    let port: Int

    /// "http://HOST:PORT", without a trailing slash.
    var baseURL: String { "http://\(host):\(port)" }

    /// Binds `host` on a random port and starts accepting.
    init(host: String = "127.0.0.1") throws {
        engine = try Engine(host: host)
        self.host = engine.address.host
        port = engine.address.port
        engine.start()
    }

    deinit { engine.stop() }

    /// `baseURL` followed by `path` (which starts with "/").
    func url(_ path: String) -> String { baseURL + path }

    /// Closes the listener and every open connection, cuts delays and drips short, and returns
    /// once all server threads have ended. Calling it again does nothing.
    func stop() { engine.stop() }

    // MARK: Content

    /// Serves `body` at `path` (matched without the query, unless a path with that query is served),
    /// replacing any file and faults there before.
    func serve(_ path: String, body: [UInt8], etag: String? = "\"v1\"", lastModified: String? = nil,
               faults: [Fault] = []) {
        engine.state.withLock {
            $0.files[path] = ServedFile(body: body, etag: etag, lastModified: lastModified)
            $0.faults[path] = faults.map(ArmedFault.init)
        }
    }

    /// Replaces the content and validators at `path`, keeping its faults (a file that changed on the server).
    func setBody(_ path: String, body: [UInt8], etag: String?, lastModified: String? = nil) {
        engine.state.withLock {
            $0.files[path] = ServedFile(body: body, etag: etag, lastModified: lastModified)
        }
    }

    /// Replaces the faults at `path`; a path with faults and no file still answers them (e.g. redirects).
    func setFaults(_ path: String, _ faults: [Fault]) {
        engine.state.withLock { $0.faults[path] = faults.map(ArmedFault.init) }
    }

    /// Removes the file and faults at `path`, so it answers 404.
    func remove(_ path: String) {
        engine.state.withLock {
            $0.files[path] = nil
            $0.faults[path] = nil
        }
    }

    // MARK: Request log and statistics

    /// Every request since the start or the last `resetStats()`, in arrival order, as they stand now.
    var requests: [LoggedRequest] { engine.state.withLock { $0.log } }

    /// The logged requests whose path (target without query) is `path`.
    func requests(to path: String) -> [LoggedRequest] {
        requests.filter { $0.path == path }
    }

    /// The log once every logged request is finished, waiting up to `timeout`: a client can see
    /// the last byte before the server thread has recorded it.
    func completedRequests(timeout: Duration = .seconds(10)) -> [LoggedRequest] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let log = requests
            if log.allSatisfy(\.isFinished) || ContinuousClock.now >= deadline { return log }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// The peak number of requests being answered at the same moment. A request counts from its
    /// parsed head until the last write of its answer (so a client's next request on a new
    /// connection never overlaps it), or until it is abandoned.
    var maxConcurrentRequests: Int { engine.state.withLock { $0.peakInFlight } }

    /// Requests being answered now.
    var requestsInFlight: Int { engine.state.withLock { $0.inFlight } }

    /// Connections accepted since the start or the last `resetStats()`.
    var acceptedConnections: Int { engine.state.withLock { $0.acceptedConnections } }

    /// Clears the log and counters; the peak restarts from the requests in flight now.
    func resetStats() {
        engine.state.withLock {
            $0.log.removeAll()
            $0.peakInFlight = $0.inFlight
            $0.acceptedConnections = 0
        }
    }

    // MARK: Test data

    /// `count` pseudo-random bytes from SplitMix64 seeded with `seed`: the same arguments give
    /// the same bytes in every run.
    static func randomBytes(_ count: Int, seed: UInt64 = 0x5EED) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < count {
                let word = generator.next().littleEndian
                if count - offset >= 8 {
                    buffer.storeBytes(of: word, toByteOffset: offset, as: UInt64.self)
                    offset += 8
                } else {
                    withUnsafeBytes(of: word) { bytes in
                        for index in 0..<(count - offset) { buffer[offset + index] = bytes[index] }
                    }
                    offset = count
                }
            }
        }
        return bytes
    }

    /// The SHA-256 digest of `bytes` (FIPS 180-4) in lowercase hex, as `sha256sum` prints it.
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        SHA256.hex(bytes)
    }

    /// The SHA-256 of the file at `path` in lowercase hex; nil when there is none.
    static func sha256Hex(ofFileAt path: String) -> String? {
        FileManager.default.contents(atPath: path).map { sha256Hex(Array($0)) }
    }

    /// `date` as an IMF-fixdate (RFC 9110 §5.6.7), for `lastModified`.
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
