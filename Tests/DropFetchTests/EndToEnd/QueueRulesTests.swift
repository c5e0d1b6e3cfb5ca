import DropFetch
import Foundation
import Testing

/// The YAML config decides what runs first, how much runs at once, and changes while running.
@Suite("Queue rules, end to end")
struct QueueRulesTests {
    @Test("with concurrency 1, jobs run by priority (job line, then class), fifo among equals")
    func priorityOrder() throws {
        let server = try TestHTTPServer()
        for name in ["a", "b", "c", "d", "e", "f"] {
            server.serve("/\(name).bin", body: TestHTTPServer.randomBytes(3_000, seed: UInt64(name.utf8.first!)))
        }
        let fixture = try SpoolFixture(extraConfig: """
            concurrency: { total: 1, per_host: 1 }
            classes:
              - name: urgent
                match: { folder: urgent }
                priority: 100
              - name: low
                match: { url: "*/f.bin" }
                priority: -20

            """)
        try fixture.drop("a.url", server.url("/a.bin") + "\n")
        try fixture.drop("b.url", "priority=10\n" + server.url("/b.bin") + "\n")
        try fixture.drop("c.url", "priority=-5\n" + server.url("/c.bin") + "\n")
        try fixture.drop("d.url", "priority=10\n" + server.url("/d.bin") + "\n")
        try fixture.drop("e.url", server.url("/e.bin") + "\n", folder: "urgent")
        try fixture.drop("f.url", server.url("/f.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        #expect(server.completedRequests().map(\.path) == ["/e.bin", "/b.bin", "/d.bin", "/a.bin", "/c.bin", "/f.bin"])
        #expect(try fixture.status("done", "e.url").className == "urgent")
        #expect(try fixture.status("done", "e.url").priority == 100)
        #expect(try fixture.status("done", "f.url").className == "low")
        #expect(try fixture.status("done", "a.url").className == "default")
    }

    @Test("a job dropped into inbox/urgent/ overtakes older queued jobs in a running daemon")
    func urgentOvertakes() throws {
        let server = try TestHTTPServer()
        let slow = TestHTTPServer.randomBytes(400_000, seed: 40)
        server.serve("/slow.bin", body: slow, faults: [.drip(bytesPerChunk: 40_000, interval: .milliseconds(100))])
        for name in ["old1", "old2", "old3", "hot"] {
            server.serve("/\(name).bin", body: TestHTTPServer.randomBytes(2_000, seed: 41))
        }
        let fixture = try SpoolFixture(extraConfig: """
            concurrency: { total: 1, per_host: 1 }
            classes:
              - name: urgent
                match: { folder: urgent }
                priority: 100

            """)
        try fixture.startDaemon()
        try fixture.drop("slow.url", server.url("/slow.bin") + "\n")
        #expect(try waitUntil { server.requests(to: "/slow.bin").count == 1 }, "\(fixture.log)")
        for name in ["old1", "old2", "old3"] { try fixture.drop("\(name).url", server.url("/\(name).bin") + "\n") }
        // Waiting jobs stay in the inbox until they are about to run (claim_ahead).
        #expect(fixture.jobs(in: "work/test-agent") == ["slow.url"])
        #expect(fixture.jobs(in: "inbox").count == 3)
        try fixture.drop("hot.url", server.url("/hot.bin") + "\n", folder: "urgent")

        #expect(try waitUntil(timeout: .seconds(30)) { fixture.jobs(in: "done").count == 5 }, "\(fixture.log)")
        try fixture.stopDaemon()

        #expect(server.completedRequests().map(\.path) == ["/slow.bin", "/hot.bin", "/old1.bin", "/old2.bin", "/old3.bin"])
    }

    @Test("per_host 2: one slow host never sees more than 2 requests at once; the other host is not held up")
    func perHostLimit() throws {
        let first = try TestHTTPServer(host: "127.0.0.1")
        let second = try TestHTTPServer(host: "127.0.0.2")
        let body = TestHTTPServer.randomBytes(20_000, seed: 42)
        first.serve("/s.bin", body: body, faults: [.delay(.milliseconds(400))])
        second.serve("/q.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "concurrency: { total: 6, per_host: 2 }\n")
        for index in 0..<10 { try fixture.drop("slow\(index).url", first.url("/s.bin?\(index)") + "\n  out=slow\(index).bin\n") }
        for index in 0..<3 { try fixture.drop("quick\(index).url", second.url("/q.bin?\(index)") + "\n  out=quick\(index).bin\n") }

        #expect(try fixture.runOnce() == 0)

        #expect(fixture.jobs(in: "done").count == 13)
        #expect(first.maxConcurrentRequests == 2)
        #expect(second.completedRequests().count == 3)
        let lastQuickDone = try #require(second.completedRequests().compactMap(\.finished).max())
        let lastSlowStart = try #require(first.completedRequests().map(\.received).max())
        #expect(lastQuickDone < lastSlowStart, "the second host's jobs should finish while the first is busy")
    }

    @Test("429 with Retry-After: 2 is retried no sooner than 2 s later, and the job is done")
    func retryAfterIsHonoured() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8_000, seed: 43)
        server.serve("/busy.bin", body: body, faults: [.times(1, .status(code: 429, headers: [("Retry-After", "2")]))])
        let fixture = try SpoolFixture()
        try fixture.drop("busy.url", server.url("/busy.bin") + "\n")

        #expect(try fixture.runOnce() == 0)

        let requests = server.completedRequests()
        #expect(requests.map(\.status) == [429, 200])
        let gap = requests[1].received - requests[0].received
        #expect(gap >= .seconds(2), "retried after \(gap)")
        let status = try fixture.status("done", "busy.url")
        #expect(status.attempts == 2)
        #expect(fixture.downloaded("busy.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("run --once leaves a retry due later than once_wait in work/ and exits 75; the next run keeps the schedule")
    func onceLeavesLateRetries() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(8_000, seed: 44)
        server.serve("/later.bin", body: body, faults: [.times(1, .status(code: 503, headers: [("Retry-After", "3")]))])
        let fixture = try SpoolFixture(extraConfig: "once_wait: 500ms\n")
        try fixture.drop("later.url", server.url("/later.bin") + "\n")

        #expect(try fixture.runOnce() == 75)
        #expect(fixture.jobs(in: "work/test-agent") == ["later.url"])
        let state = try Data(contentsOf: URL(fileURLWithPath: fixture.spool + "/work/test-agent/later.state.json"))
        let record = try #require(StatusRecord.decode(Array(state)))
        #expect(record.retryAt != nil)
        #expect(record.attempts == 1)

        try fixture.writeConfig("once_wait: 10s\n")
        #expect(try fixture.runOnce() == 0)
        let requests = server.completedRequests()
        #expect(requests.map(\.status) == [503, 200])
        #expect(requests[1].received - requests[0].received >= .seconds(2))
        #expect(try fixture.status("done", "later.url").attempts == 2)
    }

    @Test("editing a running daemon's config (concurrency 1 → 4) takes effect; a broken edit is logged and ignored")
    func liveReload() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(10_000, seed: 45)
        for index in 0..<12 {
            server.serve("/r\(index).bin", body: body, faults: [.delay(.milliseconds(700))])
        }
        let fixture = try SpoolFixture(extraConfig: "concurrency: { total: 1, per_host: 8 }\n")
        try fixture.startDaemon()
        for index in 0..<2 { try fixture.drop("r\(index).url", server.url("/r\(index).bin") + "\n") }
        #expect(try waitUntil { fixture.jobs(in: "done").count == 2 }, "\(fixture.log)")
        #expect(server.maxConcurrentRequests == 1)

        // An editor's save: a temp file renamed over the config.
        let temp = fixture.root.path + "/.config.yaml.swp"
        try """
            spool: \(fixture.spool)
            destination: \(fixture.destination)
            agent_id: test-agent
            concurrency: { total: 4, per_host: 8 }

            """.write(toFile: temp, atomically: false, encoding: .utf8)
        #expect(rename(temp, fixture.configPath) == 0)
        #expect(try waitUntil { fixture.log.contains("config reloaded") }, "\(fixture.log)")
        server.resetStats()
        for index in 2..<10 { try fixture.drop("r\(index).url", server.url("/r\(index).bin") + "\n") }
        #expect(try waitUntil { fixture.jobs(in: "done").count == 10 }, "\(fixture.log)")
        #expect(server.maxConcurrentRequests == 4)

        try "spool: \(fixture.spool)\nconcurrency: { total: lots }\n".write(toFile: fixture.configPath, atomically: false, encoding: .utf8)
        #expect(try waitUntil { fixture.log.contains("config.yaml:2:") && fixture.log.contains("concurrency.total") }, "\(fixture.log)")
        #expect(fixture.daemonIsRunning)
        for index in 10..<12 { try fixture.drop("r\(index).url", server.url("/r\(index).bin") + "\n") }
        #expect(try waitUntil { fixture.jobs(in: "done").count == 12 }, "\(fixture.log)")
        #expect(try fixture.stopDaemon() == 0)
    }
}
