import Foundation
import Testing

/// The test server checked with the real `curl` tool: content, ranges, validators, the request
/// log, keep-alive and stopping. Fault injection is in `TestHTTPServerFaultTests`.
@Suite(.timeLimit(.minutes(1))) struct TestHTTPServerTests {
    static let size = 300_000
    let server: TestHTTPServer
    let body = TestHTTPServer.randomBytes(Self.size)
    let lastModified = "Tue, 01 Jul 2025 10:00:00 GMT"

    init() throws {
        server = try TestHTTPServer()
        server.serve("/file.bin", body: body, lastModified: lastModified)
    }

    @Test func fullGetReturnsTheBodyWithValidatorsAndIsLogged() throws {
        let run = try CurlRun.run(["-H", "Authorization: Bearer t0ken", server.url("/file.bin?x=1")])
        #expect(run.exitCode == 0)
        #expect(run.httpCode == 200)
        #expect(TestHTTPServer.sha256Hex(run.body) == TestHTTPServer.sha256Hex(body))
        #expect(run.header("Content-Length") == "\(Self.size)")
        #expect(run.header("ETag") == "\"v1\"")
        #expect(run.header("Last-Modified") == lastModified)
        #expect(run.header("Accept-Ranges") == "bytes")
        #expect(run.header("Content-Range") == nil)

        let log = server.completedRequests()
        try #require(log.count == 1)
        let request = log[0]
        #expect(request.method == "GET")
        #expect(request.target == "/file.bin?x=1")
        #expect(request.path == "/file.bin")
        #expect(request.version == "HTTP/1.1")
        #expect(request.status == 200)
        #expect(request.bodyBytesSent == Self.size)
        #expect(request.header("host") == "127.0.0.1:\(server.port)")
        #expect(request.header("AUTHORIZATION") == "Bearer t0ken")
        #expect(request.header("Range") == nil)
        #expect(request.peer.host == "127.0.0.1")
        #expect(request.peer.port != server.port && request.peer.port > 0)
        #expect(request.local == TestHTTPServer.Address(host: "127.0.0.1", port: server.port))
        #expect(try #require(request.finished) >= request.received)
    }

    @Test func baseURLNamesTheBoundAddress() {
        #expect(server.port > 0)
        #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
        #expect(server.url("/a") == "http://127.0.0.1:\(server.port)/a")
    }

    @Test func closedRangeGets206WithThoseBytes() throws {
        let run = try CurlRun.run(["-r", "1000-1999", server.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.httpCode == 206)
        #expect(run.bodyFingerprint == CurlRun.fingerprint(Array(body[1000...1999])))
        #expect(run.header("Content-Range") == "bytes 1000-1999/\(Self.size)")
        #expect(run.header("Content-Length") == "1000")
        #expect(server.completedRequests().first?.header("Range") == "bytes=1000-1999")
    }

    @Test func openRangeGets206ToTheEnd() throws {
        let run = try CurlRun.run(["-H", "Range: bytes=299000-", server.url("/file.bin")])
        #expect(run.httpCode == 206)
        #expect(run.bodyFingerprint == CurlRun.fingerprint(Array(body[299_000...])))
        #expect(run.header("Content-Range") == "bytes 299000-299999/\(Self.size)")
    }

    @Test func rangeEndPastTheEndIsClampedAndSuffixRangeWorks() throws {
        let clamped = try CurlRun.run(["-r", "299990-400000", server.url("/file.bin")])
        #expect(clamped.httpCode == 206)
        #expect(clamped.header("Content-Range") == "bytes 299990-299999/\(Self.size)")
        #expect(clamped.bodyFingerprint == CurlRun.fingerprint(Array(body[299_990...])))
        let suffix = try CurlRun.run(["-r", "-500", server.url("/file.bin")])
        #expect(suffix.httpCode == 206)
        #expect(suffix.bodyFingerprint == CurlRun.fingerprint(Array(body.suffix(500))))
    }

    @Test func rangeStartingAtTheSizeGets416() throws {
        let run = try CurlRun.run(["-r", "\(Self.size)-", server.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.httpCode == 416)
        #expect(run.header("Content-Range") == "bytes */\(Self.size)")
        #expect(server.completedRequests().map(\.status) == [416])
    }

    @Test func ifRangeWithOtherETagGetsTheFullBody() throws {
        let run = try CurlRun.run(["-r", "1000-", "-H", "If-Range: \"v0\"", server.url("/file.bin")])
        #expect(run.httpCode == 200)
        #expect(run.bodyFingerprint == CurlRun.fingerprint(body))
        #expect(run.header("Content-Range") == nil)
        #expect(server.completedRequests().first?.header("If-Range") == "\"v0\"")
    }

    @Test func ifRangeWithTheCurrentValidatorGets206() throws {
        let byTag = try CurlRun.run(["-r", "1000-", "-H", "If-Range: \"v1\"", server.url("/file.bin")])
        #expect(byTag.httpCode == 206)
        #expect(byTag.bodyFingerprint == CurlRun.fingerprint(Array(body[1000...])))
        let byDate = try CurlRun.run(["-r", "1000-", "-H", "If-Range: \(lastModified)", server.url("/file.bin")])
        #expect(byDate.httpCode == 206)
        let weak = try CurlRun.run(["-r", "1000-", "-H", "If-Range: W/\"v1\"", server.url("/file.bin")])
        #expect(weak.httpCode == 200)
    }

    @Test func setBodyChangesContentAndETag() throws {
        let newBody = TestHTTPServer.randomBytes(5000, seed: 2)
        server.setBody("/file.bin", body: newBody, etag: "\"v2\"")
        let resumed = try CurlRun.run(["-r", "1000-", "-H", "If-Range: \"v1\"", server.url("/file.bin")])
        #expect(resumed.httpCode == 200)
        #expect(resumed.bodyFingerprint == CurlRun.fingerprint(newBody))
        #expect(resumed.header("ETag") == "\"v2\"")
        #expect(resumed.header("Last-Modified") == nil)
    }

    @Test func unknownPathGets404WithAnHTMLPage() throws {
        let run = try CurlRun.run([server.url("/missing")])
        #expect(run.httpCode == 404)
        #expect(String(decoding: run.body, as: UTF8.self).contains("404"))
        #expect(run.header("Content-Type")?.hasPrefix("text/html") == true)
        server.remove("/file.bin")
        #expect(try CurlRun.run([server.url("/file.bin")]).httpCode == 404)
    }

    @Test func headSendsHeadersWithoutBody() throws {
        let run = try CurlRun.run(["-I", server.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.httpCode == 200)
        #expect(run.header("Content-Length") == "\(Self.size)")
        let request = try #require(server.completedRequests().first)
        #expect(request.method == "HEAD")
        #expect(request.bodyBytesSent == 0)
    }

    @Test func otherMethodsGet405() throws {
        let run = try CurlRun.run(["-X", "DELETE", server.url("/file.bin")])
        #expect(run.httpCode == 405)
        #expect(run.header("Allow") == "GET, HEAD")
        #expect(server.completedRequests().first?.method == "DELETE")
    }

    @Test func keepAliveReusesOneConnection() throws {
        let run = try CurlRun.run([server.url("/file.bin"), server.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.httpCodes == [200, 200])
        let log = server.completedRequests()
        #expect(log.map(\.status) == [200, 200])
        #expect(Set(log.map(\.connectionID)).count == 1)
        #expect(server.acceptedConnections == 1)
    }

    @Test func connectionCloseIsHonoured() throws {
        let run = try CurlRun.run(["-H", "Connection: close", server.url("/file.bin"), server.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.httpCodes == [200, 200])
        #expect(run.header("Connection") == "close")
        let log = server.completedRequests()
        #expect(log.map(\.status) == [200, 200])
        #expect(Set(log.map(\.connectionID)).count == 2)
        #expect(server.acceptedConnections == 2)
    }

    @Test func parallelRequestsToADelayedPathOverlap() throws {
        server.setFaults("/file.bin", [.delay(.seconds(1))])
        let first = try CurlRun.start([server.url("/file.bin")])
        let second = try CurlRun.start([server.url("/file.bin")])
        #expect(try first.finish().httpCode == 200)
        #expect(try second.finish().httpCode == 200)
        #expect(server.maxConcurrentRequests == 2)

        server.resetStats()
        #expect(server.requests.isEmpty)
        #expect(try CurlRun.run([server.url("/file.bin")]).httpCode == 200)
        #expect(try CurlRun.run([server.url("/file.bin")]).httpCode == 200)
        #expect(server.maxConcurrentRequests == 1)
        #expect(server.completedRequests().count == 2)
    }

    @Test func backToBackRequestsOnNewConnectionsNeverCountAsConcurrent() throws {
        let urls = Array(repeating: server.url("/file.bin"), count: 20)
        let run = try CurlRun.run(["-H", "Connection: close"] + urls)
        #expect(run.exitCode == 0)
        #expect(run.httpCodes == Array(repeating: 200, count: 20))
        #expect(server.completedRequests().count == 20)
        #expect(server.acceptedConnections == 20)
        #expect(server.maxConcurrentRequests == 1)
    }

    @Test func secondLoopbackAddressStandsInForAnotherHost() throws {
        let other = try TestHTTPServer(host: "127.0.0.2")
        other.serve("/b", body: [1, 2, 3])
        #expect(other.baseURL == "http://127.0.0.2:\(other.port)")
        let run = try CurlRun.run([other.url("/b")])
        #expect(run.bodyFingerprint == CurlRun.fingerprint([1, 2, 3]))
        let request = try #require(other.completedRequests().first)
        #expect(request.local.host == "127.0.0.2")
        #expect(request.header("Host") == "127.0.0.2:\(other.port)")
        #expect(server.requests.isEmpty)
    }

    @Test func stopEndsOpenTransfersAndRefusesNewConnections() throws {
        server.setFaults("/file.bin", [.endlessBody])
        let running = try CurlRun.start([server.url("/file.bin")])
        #expect(try waitUntil(timeout: .seconds(10)) { server.requests.first.map { $0.bodyBytesSent > 0 } == true })
        let started = ContinuousClock.now
        server.stop()
        #expect(started.duration(to: .now) < .seconds(5))
        #expect(server.requestsInFlight == 0)
        #expect(try running.finish().exitCode != 0)
        #expect(try CurlRun.run([server.url("/file.bin")]).exitCode == 7)
        server.stop()
    }

    @Test func stopCutsADelayShort() throws {
        server.setFaults("/file.bin", [.delay(.seconds(60))])
        let running = try CurlRun.start(["-m", "120", server.url("/file.bin")])
        #expect(try waitUntil(timeout: .seconds(10)) { server.requestsInFlight == 1 })
        let started = ContinuousClock.now
        server.stop()
        #expect(started.duration(to: .now) < .seconds(5))
        #expect(try running.finish().httpCode == 0)
        #expect(server.requests.first?.status == 0)
    }

    @Test func releasingTheServerStopsIt() throws {
        var scoped: TestHTTPServer? = try TestHTTPServer()
        let url = try #require(scoped).url("/x")
        #expect(try CurlRun.run([url]).httpCode == 404)
        scoped = nil
        #expect(try CurlRun.run([url]).exitCode == 7)
    }
}
