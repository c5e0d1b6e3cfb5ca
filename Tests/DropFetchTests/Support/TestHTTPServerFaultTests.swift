import Foundation
import Testing

/// Each `TestHTTPServer.Fault`, observed through the real `curl` tool.
@Suite(.timeLimit(.minutes(1))) struct TestHTTPServerFaultTests {
    let server: TestHTTPServer
    let body = TestHTTPServer.randomBytes(100_000, seed: 7)

    init() throws {
        server = try TestHTTPServer()
        server.serve("/f", body: body)
    }

    @Test func dropAfterCutsTheBodyAndCurlReportsAPartialFile() throws {
        server.setFaults("/f", [.dropAfter(bytes: 10_000)])
        let run = try CurlRun.run([server.url("/f")])
        #expect(run.exitCode == 18)
        #expect(run.httpCode == 200)
        #expect(run.header("Content-Length") == "100000")
        #expect(run.bodyFingerprint == CurlRun.fingerprint(Array(body.prefix(10_000))))
        let request = try #require(server.completedRequests().first)
        #expect(request.bodyBytesSent == 10_000)
    }

    @Test func dropAfterCountsFromTheStartOfA206Body() throws {
        server.setFaults("/f", [.dropAfter(bytes: 100)])
        let run = try CurlRun.run(["-r", "50000-", server.url("/f")])
        #expect(run.exitCode == 18)
        #expect(run.httpCode == 206)
        #expect(run.bodyFingerprint == CurlRun.fingerprint(Array(body[50_000..<50_100])))
    }

    @Test func timesLimitsAFaultToTheFirstRequests() throws {
        server.setFaults("/f", [.times(2, .status(code: 503)), .times(1, .dropAfter(bytes: 5))])
        #expect(try CurlRun.run([server.url("/f")]).httpCode == 503)
        #expect(try CurlRun.run([server.url("/f")]).httpCode == 503)
        let third = try CurlRun.run([server.url("/f")])
        #expect(third.exitCode == 0)
        #expect(third.bodyFingerprint == CurlRun.fingerprint(body))
        #expect(server.completedRequests().map(\.status) == [503, 503, 200])
    }

    @Test func competingReplacementsTakeTurns() throws {
        server.setFaults("/f", [.times(1, .status(code: 503)), .times(1, .lyingContentLength(1_000_000))])
        #expect(try CurlRun.run([server.url("/f")]).httpCode == 503)
        let short = try CurlRun.run([server.url("/f")])
        #expect(short.exitCode == 18)
        #expect(short.header("Content-Length") == "1000000")
        let whole = try CurlRun.run([server.url("/f")])
        #expect(whole.exitCode == 0)
        #expect(whole.bodyFingerprint == CurlRun.fingerprint(body))
    }

    @Test func timesIsSpentOnlyWhereTheFaultTookEffect() {
        var state = TestHTTPServer.State()
        state.files["/f"] = TestHTTPServer.ServedFile(body: [1, 2, 3], etag: "\"a\"")
        state.faults["/f"] = [
            .times(1, .status(code: 500)), .times(1, .ignoreRange),
            .times(1, .changeETagAfterFirstRequest(to: "\"b\"")), .times(2, .delay(.seconds(1))),
        ].map(TestHTTPServer.ArmedFault.init)

        let (first, firstFile) = state.takePlan(for: "/f")
        #expect(first.replacement != nil && !first.ignoreRange && first.delay == .seconds(1))
        #expect(firstFile?.etag == "\"a\"" && state.files["/f"]?.etag == "\"a\"")

        let (second, secondFile) = state.takePlan(for: "/f")
        #expect(second.replacement == nil && second.ignoreRange && second.delay == .seconds(1))
        #expect(secondFile?.etag == "\"a\"" && state.files["/f"]?.etag == "\"b\"")

        let (third, _) = state.takePlan(for: "/f")
        #expect(third.replacement == nil && !third.ignoreRange && third.delay == nil)
        #expect(state.faults["/f"]?.allSatisfy { $0.remaining == 0 } == true)
    }

    @Test func ignoreRangeAnswersTheWholeBody() throws {
        server.setFaults("/f", [.ignoreRange])
        let run = try CurlRun.run(["-r", "500-", server.url("/f")])
        #expect(run.httpCode == 200)
        #expect(run.bodyFingerprint == CurlRun.fingerprint(body))
        #expect(run.header("Content-Range") == nil)
    }

    @Test func changeETagAfterFirstRequestServesTheNewFileAfterwards() throws {
        let newBody = TestHTTPServer.randomBytes(2000, seed: 8)
        server.setFaults("/f", [.changeETagAfterFirstRequest(to: "\"v2\"", body: newBody)])
        let first = try CurlRun.run([server.url("/f")])
        #expect(first.header("ETag") == "\"v1\"")
        #expect(first.bodyFingerprint == CurlRun.fingerprint(body))
        let second = try CurlRun.run(["-r", "10-", "-H", "If-Range: \"v1\"", server.url("/f")])
        #expect(second.httpCode == 200)
        #expect(second.header("ETag") == "\"v2\"")
        #expect(second.bodyFingerprint == CurlRun.fingerprint(newBody))
        let third = try CurlRun.run(["-r", "10-", "-H", "If-Range: \"v2\"", server.url("/f")])
        #expect(third.httpCode == 206)
        #expect(third.bodyFingerprint == CurlRun.fingerprint(Array(newBody[10...])))
    }

    @Test func statusFaultsCarryTheirHeadersAndBody() throws {
        server.setFaults("/f", [.status(code: 429, headers: [("Retry-After", "7")])])
        let limited = try CurlRun.run([server.url("/f")])
        #expect(limited.httpCode == 429)
        #expect(limited.header("Retry-After") == "7")
        #expect(String(decoding: limited.body, as: UTF8.self) == "error page")

        server.setFaults("/f", [.status(code: 500, body: "boom")])
        let failed = try CurlRun.run(["-f", server.url("/f")])
        #expect(failed.exitCode == 22)
        #expect(failed.httpCode == 500)
        #expect(server.completedRequests().map(\.status) == [429, 500])
    }

    @Test func redirectsAreFollowedByCurl() throws {
        server.setFaults("/relative", [.redirect(to: "/f")])
        server.setFaults("/absolute", [.redirect(to: server.url("/relative"), code: 301)])
        let run = try CurlRun.run(["-L", server.url("/absolute")])
        #expect(run.exitCode == 0)
        #expect(run.httpCode == 200)
        #expect(run.bodyFingerprint == CurlRun.fingerprint(body))
        let log = server.completedRequests()
        #expect(log.map(\.path) == ["/absolute", "/relative", "/f"])
        #expect(log.map(\.status) == [301, 302, 200])

        let unfollowed = try CurlRun.run([server.url("/relative")])
        #expect(unfollowed.httpCode == 302)
        #expect(unfollowed.header("Location") == "/f")
    }

    @Test func redirectLoopMakesCurlGiveUp() throws {
        server.setFaults("/a", [.redirect(to: "/b")])
        server.setFaults("/b", [.redirect(to: "/a", code: 307)])
        let run = try CurlRun.run(["-L", "--max-redirs", "5", server.url("/a")])
        #expect(run.exitCode == 47)
        #expect(server.completedRequests().count == 6)
    }

    @Test func dripSendsTheBodySlowly() throws {
        server.serve("/slow", body: Array(body.prefix(4000)), faults: [.drip(bytesPerChunk: 1000, interval: .milliseconds(150))])
        let started = ContinuousClock.now
        let run = try CurlRun.run([server.url("/slow")])
        #expect(started.duration(to: .now) >= .milliseconds(450))
        #expect(run.exitCode == 0)
        #expect(run.bodyFingerprint == CurlRun.fingerprint(Array(body.prefix(4000))))
    }

    @Test func delayHoldsTheAnswerBack() throws {
        server.setFaults("/f", [.delay(.milliseconds(400))])
        let started = ContinuousClock.now
        let run = try CurlRun.run([server.url("/f")])
        #expect(started.duration(to: .now) >= .milliseconds(400))
        #expect(run.bodyFingerprint == CurlRun.fingerprint(body))
    }

    @Test func endlessBodyRunsUntilTheClientGivesUp() throws {
        server.setFaults("/f", [.endlessBody])
        let run = try CurlRun.run(["-m", "1", server.url("/f")])
        #expect(run.exitCode == 28)
        #expect(run.httpCode == 200)
        #expect(run.body.count > 100_000)
        #expect(CurlRun.fingerprint(run.body.prefix(512)) == CurlRun.fingerprint((0..<512).map { UInt8(truncatingIfNeeded: $0) }))
        let request = try #require(server.completedRequests().first)
        #expect(request.isFinished)
        #expect(request.bodyBytesSent >= run.body.count)
    }

    @Test func endlessBodyWithDripStillEndsWhenCurlDoes() throws {
        server.setFaults("/f", [.endlessBody, .drip(bytesPerChunk: 10, interval: .milliseconds(50))])
        let run = try CurlRun.run(["-m", "1", server.url("/f")])
        #expect(run.exitCode == 28)
        #expect(run.body.count >= 10 && run.body.count <= 400)
        #expect(server.completedRequests().first?.isFinished == true)
    }

    @Test func lyingContentLengthEndsShortOfItsClaim() throws {
        server.setFaults("/f", [.lyingContentLength(1_000_000)])
        let run = try CurlRun.run([server.url("/f")])
        #expect(run.exitCode == 18)
        #expect(run.header("Content-Length") == "1000000")
        #expect(run.bodyFingerprint == CurlRun.fingerprint(body))

        server.setFaults("/f", [.lyingContentLength(50)])
        let short = try CurlRun.run([server.url("/f")])
        #expect(short.exitCode == 18)
        #expect(short.bodyFingerprint == CurlRun.fingerprint(Array(body.prefix(49))))
    }

    @Test func contentRangeOn200EchoesTheRequestedStart() throws {
        server.setFaults("/f", [.contentRangeOn200])
        let run = try CurlRun.run(["-r", "100-", server.url("/f")])
        #expect(run.httpCode == 200)
        #expect(run.header("Content-Range") == "bytes 100-99999/100000")
        #expect(run.bodyFingerprint == CurlRun.fingerprint(body))
    }

    @Test func faultsOnAPathWithoutAFileStillApply() throws {
        server.setFaults("/nothing", [.delay(.milliseconds(10))])
        #expect(try CurlRun.run([server.url("/nothing")]).httpCode == 404)
        server.setFaults("/nothing", [.status(code: 503, headers: [("Retry-After", "1")])])
        #expect(try CurlRun.run([server.url("/nothing")]).httpCode == 503)
    }
}
