import DropFetch
import Foundation
import Testing

/// docs/job-files.md: `header=` values and URL credentials go only to the origin (scheme, host, port)
/// of the job's own URL, whatever host a redirect names. The real binary against two servers,
/// one on 127.0.0.1 and one on 127.0.0.2 standing in for another host.
@Suite("Redirects: headers stay with their origin, end to end")
struct RedirectOriginTests {
    static let secretHeaders = ["X-Api-Key", "Authorization", "Cookie"]

    static func headerLines(key: String) -> String {
        "  header=X-Api-Key: \(key)\n  header=Authorization: Bearer token-\(key)\n  header=Cookie: session=cookie-\(key)\n"
    }

    @Test("a redirect to another host carries none of the job's header= values, Authorization or Cookie")
    func crossOrigin() throws {
        let origin = try TestHTTPServer()
        let other = try TestHTTPServer(host: "127.0.0.2")
        let body = TestHTTPServer.randomBytes(200_000, seed: 101)
        let second = TestHTTPServer.randomBytes(50_000, seed: 102)
        other.serve("/data/f.bin", body: body)
        other.serve("/data/g.bin", body: second)
        other.serve("/data/h.bin", body: second)
        origin.setFaults("/start/f.bin", [.redirect(to: other.url("/data/f.bin"))])
        origin.setFaults("/start/g.bin", [.redirect(to: other.url("/data/g.bin"), code: 307)])
        origin.setFaults("/start/h.bin", [.redirect(to: other.url("/data/h.bin"), code: 303)])
        let fixture = try SpoolFixture()
        let jobURL = origin.url("/start/f.bin")
        try fixture.drop("f.url", jobURL + "\n" + Self.headerLines(key: "apikey-123") + "  out=f.bin\n")
        // Credentials in the URL become `Authorization: Basic`: for the job's host only.
        try fixture.drop("g.url", "http://user:pw-secret@\(origin.host):\(origin.port)/start/g.bin\n  out=g.bin\n")
        // So do aria2's http-user and http-passwd.
        try fixture.drop("h.url", origin.url("/start/h.bin") + "\n  http-user=huser\n  http-passwd=hpw-secret\n  out=h.bin\n")

        #expect(try fixture.runOnce() == 0)

        let first = try #require(origin.requests(to: "/start/f.bin").first)
        #expect(first.header("X-Api-Key") == "apikey-123")
        #expect(first.header("Authorization") == "Bearer token-apikey-123")
        #expect(first.header("Cookie") == "session=cookie-apikey-123")
        #expect(origin.requests(to: "/start/g.bin").first?.header("Authorization")?.hasPrefix("Basic ") == true)
        #expect(origin.requests(to: "/start/h.bin").first?.header("Authorization")?.hasPrefix("Basic ") == true)
        let moved = other.requests.filter { $0.path.hasPrefix("/data/") }
        #expect(moved.count == 3, "\(moved)")
        for request in moved {
            for name in Self.secretHeaders {
                #expect(request.header(name) == nil, "\(request.path) got \(name): \(request.header(name) ?? "")")
            }
        }

        let status = try fixture.status("done", "f.url")
        let download = try #require(status.downloads.first)
        #expect(download.state == .done)
        #expect(download.url == jobURL, "the status names the job's URL, not the redirect's")
        #expect(download.httpStatus == 200)
        #expect(download.sha256 == TestHTTPServer.sha256Hex(body))
        #expect(fixture.downloaded("f.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        let credentialed = try #require(try fixture.status("done", "g.url").downloads.first)
        #expect(credentialed.url == "http://***@\(origin.host):\(origin.port)/start/g.bin")
        #expect(credentialed.sha256 == TestHTTPServer.sha256Hex(second))
        #expect(try fixture.status("done", "h.url").downloads.first?.sha256 == TestHTTPServer.sha256Hex(second))
        #expect(!fixture.log.contains("pw-secret") && !fixture.log.contains("hpw-secret"))
    }

    @Test("a redirect within the job's origin keeps the headers; another port of the same host is another origin")
    func sameOriginOnly() throws {
        let origin = try TestHTTPServer()
        let otherPort = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(30_000, seed: 103)
        origin.setFaults("/s/one", [.redirect(to: "/s/two", code: 301)])
        origin.setFaults("/s/two", [.redirect(to: origin.url("/s/f.bin"), code: 308)])
        origin.serve("/s/f.bin", body: body)
        origin.setFaults("/p/one", [.redirect(to: otherPort.url("/p/f.bin"))])
        otherPort.serve("/p/f.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.drop("same.url", origin.url("/s/one") + "\n" + Self.headerLines(key: "k-same") + "  out=same.bin\n")
        try fixture.drop("port.url", origin.url("/p/one") + "\n" + Self.headerLines(key: "k-port") + "  out=port.bin\n")

        #expect(try fixture.runOnce() == 0)

        for path in ["/s/one", "/s/two", "/s/f.bin"] {
            let request = try #require(origin.requests(to: path).first, "\(path) was not requested")
            #expect(request.header("X-Api-Key") == "k-same", "\(path)")
            #expect(request.header("Cookie") == "session=cookie-k-same", "\(path)")
        }
        #expect(origin.requests(to: "/p/one").first?.header("X-Api-Key") == "k-port")
        let moved = try #require(otherPort.requests(to: "/p/f.bin").first)
        for name in Self.secretHeaders { #expect(moved.header(name) == nil, "port \(otherPort.port) got \(name)") }
        #expect(fixture.downloaded("same.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(fixture.downloaded("port.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("a resumed download sends Range and If-Range to every hop, and the job's headers only to its origin")
    func resumeAcrossHosts() throws {
        let origin = try TestHTTPServer()
        let other = try TestHTTPServer(host: "127.0.0.2")
        let body = TestHTTPServer.randomBytes(600_000, seed: 104)
        other.serve("/r/f.bin", body: body, etag: "\"r1\"", faults: [.times(1, .dropAfter(bytes: 200_000))])
        origin.setFaults("/r/start", [.redirect(to: other.url("/r/f.bin"))])
        let fixture = try SpoolFixture()
        try fixture.drop("r.url", origin.url("/r/start") + "\n" + Self.headerLines(key: "k-resume") + "  out=r.bin\n")

        #expect(try fixture.runOnce() == 0)

        let starts = origin.requests(to: "/r/start")
        #expect(starts.count == 2, "\(starts)")
        #expect(starts.allSatisfy { $0.header("X-Api-Key") == "k-resume" })
        #expect(starts.last?.header("Range") != nil, "the resumed request to the job's URL lacks Range")
        let hops = other.completedRequests().filter { $0.path == "/r/f.bin" }
        #expect(hops.map(\.status) == [200, 206])
        let resumed = try #require(hops.last)
        #expect(resumed.header("Range")?.hasPrefix("bytes=") == true)
        #expect(resumed.header("If-Range") == "\"r1\"")
        for hop in hops {
            for name in Self.secretHeaders { #expect(hop.header(name) == nil, "the hop got \(name)") }
        }
        let download = try #require(try fixture.status("done", "r.url").downloads.first)
        #expect(download.httpStatus == 206)
        #expect(download.resumedFrom > 0)
        #expect(download.sha256 == TestHTTPServer.sha256Hex(body))
        #expect(fixture.downloaded("r.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("too many redirects and redirect loops across hosts fail as redirect, once, naming the job's URL")
    func tooManyAndLoops() throws {
        let origin = try TestHTTPServer()
        let other = try TestHTTPServer(host: "127.0.0.2")
        origin.setFaults("/m/0", [.redirect(to: other.url("/m/1"))])
        other.setFaults("/m/1", [.redirect(to: origin.url("/m/2"))])
        origin.setFaults("/m/2", [.redirect(to: other.url("/m/3"))])
        other.serve("/m/3", body: TestHTTPServer.randomBytes(1_000, seed: 105))
        origin.setFaults("/l/a", [.redirect(to: other.url("/l/b"))])
        other.setFaults("/l/b", [.redirect(to: origin.url("/l/a"), code: 303)])
        let fixture = try SpoolFixture(extraConfig: "max_redirects: 2\n")
        try fixture.drop("many.url", origin.url("/m/0") + "\n  out=many.bin\n")
        try fixture.drop("loop.url", origin.url("/l/a") + "\n  out=loop.bin\n")

        #expect(try fixture.runOnce() == 1)

        #expect(other.requests(to: "/m/3").isEmpty, "a third redirect was followed")
        #expect(origin.requests(to: "/l/a").count == 1, "the loop was walked again")
        for (job, url) in [("many.url", origin.url("/m/0")), ("loop.url", origin.url("/l/a"))] {
            let status = try fixture.status("failed", job)
            #expect(status.error?.kind == .redirect, "\(job): \(String(describing: status.error))")
            #expect(status.attempts == 1)
            let download = try #require(status.downloads.first)
            #expect(download.url == url)
            #expect(download.httpStatus == 302 || download.httpStatus == 303)
        }
        #expect(fixture.destinationNames().isEmpty)
    }

    /// `per_host` counts a transfer under its job's host for as long as it runs, redirects and all:
    /// the place a redirected job took is given back under the host it was taken under (before,
    /// the hop's host was counted up and never down, so with `per_host: 1` no job of that host
    /// could start again and `run --once` never ended).
    @Test("per_host gives back the place of a job redirected to another host: that host's own jobs still run")
    func redirectGivesPlaceBack() throws {
        let origin = try TestHTTPServer()
        let other = try TestHTTPServer(host: "127.0.0.2")
        var bodies: [String: [UInt8]] = [:]
        for (index, name) in ["a", "b", "c", "d"].enumerated() {
            bodies[name] = TestHTTPServer.randomBytes(20_000, seed: 110 + UInt64(index))
            other.serve("/data/\(name).bin", body: bodies[name]!)
        }
        origin.setFaults("/start/a.bin", [.redirect(to: other.url("/data/a.bin"))])
        origin.setFaults("/start/b.bin", [.redirect(to: other.url("/data/b.bin"))])
        let fixture = try SpoolFixture(extraConfig: "concurrency: { total: 4, per_host: 1 }\n")
        try fixture.drop("a.url", origin.url("/start/a.bin") + "\n  out=a.bin\n")
        try fixture.drop("b.url", origin.url("/start/b.bin") + "\n  out=b.bin\n")
        try fixture.drop("c.url", other.url("/data/c.bin") + "\n  out=c.bin\n")
        try fixture.drop("d.url", other.url("/data/d.bin") + "\n  out=d.bin\n")

        #expect(try fixture.runOnce(timeout: 60) == 0)

        for name in ["a", "b", "c", "d"] {
            let status = try fixture.status("done", "\(name).url")
            #expect(status.state == .done, "\(name): \(status.state)")
            #expect(status.downloads.first?.sha256 == TestHTTPServer.sha256Hex(bodies[name]!))
            #expect(fixture.downloaded("\(name).bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(bodies[name]!))
        }
    }
}
