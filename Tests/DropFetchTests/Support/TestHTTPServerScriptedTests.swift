import Foundation
import Testing

/// `ScriptedHTTPServer` checked with the real `curl` tool: answers as scripted, ranges without
/// regard for If-Range, cut bodies, and the request log.
@Suite(.timeLimit(.minutes(1))) struct ScriptedHTTPServerTests {
    let version1 = TestHTTPServer.randomBytes(50_000, seed: 1)
    let version2 = TestHTTPServer.randomBytes(50_000, seed: 2)

    @Test func answersAsScriptedAndLogs() throws {
        let (v1, v2) = (version1, version2)
        let server = try ScriptedHTTPServer { head, number in
            number == 0 ? .file(v1, etag: "\"v1\"", range: head.header("Range"), dropAfter: 10_000)
                        : .file(v2, etag: "\"v2\"", range: head.header("Range"))
        }
        let cut = try CurlRun.run([server.url("/f.bin")])
        #expect(cut.exitCode == 18)
        #expect(cut.httpCode == 200)
        #expect(cut.bodyFingerprint == CurlRun.fingerprint(v1.prefix(10_000)))
        #expect(cut.header("ETag") == "\"v1\"")

        let ranged = try CurlRun.run(["-r", "10000-", "-H", "If-Range: \"v1\"", server.url("/f.bin?x")])
        #expect(ranged.httpCode == 206)
        #expect(ranged.header("ETag") == "\"v2\"", "If-Range is not honoured: that is the point")
        #expect(ranged.header("Content-Range") == "bytes 10000-49999/50000")
        #expect(ranged.bodyFingerprint == CurlRun.fingerprint(v2[10_000...]))

        let log = server.requests
        #expect(log.map(\.status) == [200, 206])
        #expect(log.map(\.bodyBytesSent) == [10_000, 40_000])
        #expect(log.map(\.path) == ["/f.bin", "/f.bin"])
        #expect(log[1].target == "/f.bin?x")
        #expect(log[1].header("If-Range") == "\"v1\"")
        #expect(log.allSatisfy { $0.isFinished })
    }

    @Test func plainStatusAndStop() throws {
        let server = try ScriptedHTTPServer { _, _ in .init(status: 503, headers: [("Retry-After", "7")], body: Array("busy".utf8)) }
        let run = try CurlRun.run([server.url("/x")])
        #expect(run.httpCode == 503)
        #expect(run.header("Retry-After") == "7")
        #expect(run.body == Array("busy".utf8))
        server.stop()
        #expect(try CurlRun.run([server.url("/x")]).exitCode == 7)
    }
}
