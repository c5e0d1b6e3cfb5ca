import DropFetch
import Foundation
import Testing

/// docs/config.md "Bandwidth", measured on the wall clock with the real binary. The margins allow for
/// a busy 2-core machine: the limits hold the average within ±10%, the bounds here are wider.
@Suite("Bandwidth limits, end to end")
struct BandwidthTests {
    /// Seconds since `start`.
    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let (whole, fraction) = (ContinuousClock.now - start).components
        return Double(whole) + Double(fraction) / 1e18
    }

    @Test("a 1.2 MB download at max-download-limit=200K takes 4.5–7.5 s; its state file shows the limit, the speed and one connection")
    func ownLimit() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_258_291, seed: 110)
        server.serve("/own.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.drop("own.url", server.url("/own.bin") + "\n  max-download-limit=200K\n")

        let start = ContinuousClock.now
        let agent = try AgentProcess(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture)
        try agent.start()
        var entry: [String: Any]?
        #expect(try waitUntil(timeout: .seconds(4), interval: .milliseconds(50)) {
            entry = fixture.runningEntry("own.url")
            return entry?["bytes_per_second"] is Int
        }, "\(fixture.log)")
        #expect(try agent.wait(timeout: .seconds(30)) == .exited(0), "\(fixture.log)")
        let elapsed = seconds(since: start)

        #expect((4.5...7.5).contains(elapsed), "took \(elapsed) s")
        #expect(entry?["rate_limit"] as? Int == 204_800)
        #expect(entry?["connections"] as? Int == 1)
        let speed = entry?["bytes_per_second"] as? Int ?? 0
        #expect((100_000...260_000).contains(speed), "bytes_per_second \(speed)")
        #expect(fixture.downloaded("own.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(server.completedRequests().map(\.version) == ["HTTP/1.1"])
    }

    @Test("three 600 KB jobs under limits.rate_limit 300K finish together in 4.5–7.5 s, none in under half another's time")
    func globalLimitIsShared() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(614_400, seed: 111)
        server.serve("/shared.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: """
            concurrency: { total: 4, per_host: 4 }
            limits: { rate_limit: 300K }

            """)
        for index in 1...3 {
            try fixture.drop("s\(index).url", server.url("/shared.bin?\(index)") + "\n  out=s\(index).bin\n")
        }

        let start = ContinuousClock.now
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let elapsed = seconds(since: start)

        #expect((4.5...7.5).contains(elapsed), "took \(elapsed) s")
        let times = try (1...3).map { try fixture.status("done", "s\($0).url").downloads[0].seconds }
        for time in times { #expect((4.5...7.5).contains(time), "download times \(times)") }
        #expect(times.min()! >= times.max()! / 2, "download times \(times)")
        for index in 1...3 {
            #expect(fixture.downloaded("s\(index).bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        }
    }

    @Test("a class rate_limit slows only its class; the metrics file counts bytes by class")
    func classLimitSlowsOnlyItsClass() throws {
        let server = try TestHTTPServer()
        let slowBody = TestHTTPServer.randomBytes(409_600, seed: 112)
        let fastBody = TestHTTPServer.randomBytes(2_000_000, seed: 113)
        server.serve("/slow.bin", body: slowBody)
        server.serve("/fast.bin", body: fastBody)
        let fixture = try SpoolFixture()
        let metrics = fixture.root.path + "/dropfetch.prom"
        try fixture.writeConfig("""
            metrics_file: \(metrics)
            classes:
              - name: slow
                match: { folder: slow }
                rate_limit: 100K

            """)
        try fixture.drop("s.url", server.url("/slow.bin") + "\n", folder: "slow")
        try fixture.drop("f.url", server.url("/fast.bin") + "\n")

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")

        let slow = try fixture.status("done", "s.url")
        let fast = try fixture.status("done", "f.url")
        #expect(slow.className == "slow")
        #expect((3.6...6.0).contains(slow.downloads[0].seconds), "slow class took \(slow.downloads[0].seconds) s")
        #expect(fast.downloads[0].seconds < 1.5, "the unlimited class took \(fast.downloads[0].seconds) s")
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains(#"dropfetch_received_bytes_total{agent="test-agent",class="slow"} 409600"#), "\(text)")
        #expect(text.contains(#"dropfetch_received_bytes_total{agent="test-agent",class="default"} 2000000"#), "\(text)")
    }

    @Test("with no limit in the config, a max-download-limit job beside unlimited ones is slowed alone; all bytes are counted")
    func ownLimitBesideUnlimited() throws {
        let server = try TestHTTPServer()
        let limitedBody = TestHTTPServer.randomBytes(409_600, seed: 118)
        let fastBody = TestHTTPServer.randomBytes(2_000_000, seed: 119)
        server.serve("/limited.bin", body: limitedBody)
        server.serve("/fast.bin", body: fastBody)
        let fixture = try SpoolFixture()
        let metrics = fixture.root.path + "/dropfetch.prom"
        try fixture.writeConfig("""
            metrics_file: \(metrics)
            concurrency: { total: 4, per_host: 4 }

            """)
        // The unlimited jobs start first (higher priority), then the limited one beside them.
        try fixture.drop("f1.url", "priority=10\n" + server.url("/fast.bin?1") + "\n  out=f1.bin\n")
        try fixture.drop("f2.url", "priority=10\n" + server.url("/fast.bin?2") + "\n  out=f2.bin\n")
        try fixture.drop("l.url", server.url("/limited.bin") + "\n  max-download-limit=200K\n")

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")

        let limited = try fixture.status("done", "l.url").downloads[0]
        #expect((1.6...3.5).contains(limited.seconds), "the limited job took \(limited.seconds) s")
        for job in ["f1.url", "f2.url"] {
            let fast = try fixture.status("done", job).downloads[0]
            #expect(fast.seconds < 1.5, "the unlimited job \(job) took \(fast.seconds) s")
        }
        #expect(fixture.downloaded("limited.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(limitedBody))
        #expect(fixture.downloaded("f1.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(fastBody))
        #expect(fixture.downloaded("f2.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(fastBody))
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains(#"dropfetch_received_bytes_total{agent="test-agent",class="default"} 4409600"#), "\(text)")
    }

    @Test("lifting a limit by editing the config speeds up a running transfer within 2 s")
    func reloadLiftsLimit() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(3_000_000, seed: 114)
        server.serve("/big.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "limits: { rate_limit: 100K }\n")
        try fixture.startDaemon()
        try fixture.drop("big.url", server.url("/big.bin") + "\n")
        var entry: [String: Any]?
        #expect(try waitUntil(timeout: .seconds(5), interval: .milliseconds(50)) {
            entry = fixture.runningEntry("big.url")
            return (entry?["bytes"] as? Int ?? 0) > 0 && entry?["bytes_per_second"] is Int
        }, "\(fixture.log)")
        #expect(entry?["rate_limit"] as? Int == 102_400)
        let before = entry?["bytes"] as? Int ?? 0
        #expect(before < 400_000, "\(before) bytes before the edit: the limit did not hold")

        let edited = ContinuousClock.now
        try fixture.writeConfig("")
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(20)) {
            fixture.jobs(in: "done") == ["big.url"]
        }, "\(fixture.log)")
        let elapsed = seconds(since: edited)
        try fixture.stopDaemon()

        // At 100K the remaining 2.6 MB or more would take over 25 s.
        #expect(elapsed < 3, "done \(elapsed) s after the edit")
        #expect(fixture.log.contains("config reloaded"))
        #expect(fixture.downloaded("big.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("imposing a limit by editing the config slows a running transfer within 2 s")
    func reloadImposesLimit() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(4_000_000, seed: 117)
        // About 400 KB/s from the server: ten seconds unlimited.
        server.serve("/long.bin", body: body, faults: [.drip(bytesPerChunk: 40_000, interval: .milliseconds(100))])
        let fixture = try SpoolFixture()
        try fixture.startDaemon()
        try fixture.drop("long.url", server.url("/long.bin") + "\n")
        let part = fixture.destination + "/.long.bin.part"
        #expect(try waitUntil(timeout: .seconds(5), interval: .milliseconds(20)) { (fixture.fileSize(part) ?? 0) > 100_000 },
                "\(fixture.log)")

        let edited = ContinuousClock.now
        try fixture.writeConfig("limits: { rate_limit: 50K }\n")
        #expect(try waitUntil(timeout: .seconds(5)) { fixture.log.contains("config reloaded") }, "\(fixture.log)")
        _ = try waitUntil(timeout: .seconds(2), interval: .milliseconds(5)) { ContinuousClock.now - edited >= .seconds(2) }
        let atTwo = fixture.fileSize(part) ?? 0
        _ = try waitUntil(timeout: .seconds(3), interval: .milliseconds(5)) { ContinuousClock.now - edited >= .seconds(4) }
        let atFour = fixture.fileSize(part) ?? 0
        var entry: [String: Any]?
        _ = try waitUntil(timeout: .seconds(2), interval: .milliseconds(50)) {
            entry = fixture.runningEntry("long.url")
            return entry?["rate_limit"] is Int
        }
        try fixture.stopDaemon()

        // 2 s at 50K is 102,400 bytes; unlimited it would be about 800,000.
        #expect(atFour - atTwo <= 160_000, "\(atFour - atTwo) bytes from 2 s to 4 s after the edit")
        #expect(atFour - atTwo >= 60_000, "\(atFour - atTwo) bytes from 2 s to 4 s after the edit")
        #expect(entry?["rate_limit"] as? Int == 51_200)
    }

    @Test("a 20K limit under a 50KB/s low-speed rule is not a timeout, even from a server just under the limit")
    func throttlingIsNotLowSpeed() throws {
        let server = try TestHTTPServer()
        let steady = TestHTTPServer.randomBytes(122_880, seed: 115)
        let dripping = TestHTTPServer.randomBytes(100_000, seed: 116)
        server.serve("/steady.bin", body: steady)
        // 18 KB/s: the agent's 20K bucket almost never has to pause this one.
        server.serve("/drip.bin", body: dripping, faults: [.drip(bytesPerChunk: 1_800, interval: .milliseconds(100))])
        let fixture = try SpoolFixture(extraConfig: """
            limits: { low_speed: { bytes_per_second: 50KB, for: 3s } }

            """)
        try fixture.drop("steady.url", server.url("/steady.bin") + "\n  max-download-limit=20K\n")
        try fixture.drop("drip.url", server.url("/drip.bin") + "\n  max-download-limit=20K\n")

        let start = ContinuousClock.now
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let elapsed = seconds(since: start)

        #expect(elapsed >= 4.5, "took \(elapsed) s: the 20K limit did not hold")
        for job in ["steady.url", "drip.url"] {
            let status = try fixture.status("done", job)
            #expect(status.attempts == 1, "\(job): \(status.downloads[0].error?.message ?? "")")
        }
        #expect(!fixture.log.contains("too slow"), "\(fixture.log)")
        #expect(fixture.downloaded("steady.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(steady))
        #expect(fixture.downloaded("drip.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(dripping))
    }
}
