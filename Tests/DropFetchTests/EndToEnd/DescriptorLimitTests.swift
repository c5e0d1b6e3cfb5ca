import Foundation
import Glibc
import Testing

/// The agent's descriptors (`DescriptorLimit`): finishes that fall behind the downloads (`fsync:
/// true` on a disk slower than the network) hold their parts open, so a soft limit below the hard
/// one is raised at start, and under a low hard limit starts wait for finishes to close theirs.
@Suite("Descriptor limits, end to end")
struct DescriptorLimitTests {
    /// `dropfetch ARGUMENTS` started by a shell that first runs `ulimit LIMIT` (dash: `-n` sets the
    /// soft and hard limits, `-Sn` the soft one).
    static func start(_ arguments: [String], limit: String, _ fixture: SpoolFixture) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit \(limit) && exec \"$0\" \"$@\" 2>>\"$LOG\"", SpoolFixture.binary]
            + arguments + ["--config", fixture.configPath]
        process.environment = ProcessInfo.processInfo.environment.merging(["LOG": fixture.logPath]) { _, new in new }
        try process.runSerially()
        return process
    }

    /// Whether `agent` ended within `timeout`; one that did not is killed and recorded as an
    /// issue, so that a run that never ends fails the test instead of hanging it.
    static func ends(_ agent: Process, within timeout: Duration, _ fixture: SpoolFixture) throws -> Bool {
        if try waitUntil(timeout: timeout, { !agent.isRunning }) {
            agent.waitUntilExit()
            return true
        }
        kill(agent.processIdentifier, SIGKILL)
        agent.waitUntilExit()
        Issue.record("run --once did not end within \(timeout): \(fixture.logTail())")
        return false
    }

    /// Serves `/PREFIXi.bin` for each `i` in `indices`, `size + i` random bytes from `seed + i`, with
    /// the faults `faults(i)` gives; returns the bodies by index.
    static func serveBodies(_ server: TestHTTPServer, _ indices: some Sequence<Int>, prefix: String, size: Int, seed: UInt64,
                            faults: (Int) -> [TestHTTPServer.Fault] = { _ in [] }) -> [Int: [UInt8]] {
        var bodies: [Int: [UInt8]] = [:]
        for index in indices {
            let body = TestHTTPServer.randomBytes(size + index, seed: seed + UInt64(index))
            bodies[index] = body
            server.serve("/\(prefix)\(index).bin", body: body, faults: faults(index))
        }
        return bodies
    }

    /// The files in the agent's work folder besides its lease and lock.
    static func workFiles(_ fixture: SpoolFixture) -> [String] {
        fixture.names(in: "work/test-agent").filter { ![".lease", ".lock"].contains($0) }
    }

    /// The test process's hard limit.
    static var ownHardLimit: rlim_t {
        var limit = rlimit()
        return getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? limit.rlim_max : 0
    }

    /// The hard limit the tests give the agent: 4,096 (they run only where the test process may).
    static let hard: rlim_t = 4096

    @Test("with fsync on and a soft limit of 256 descriptors (hard 4,096), 1,000 small jobs 16 at a time all end in done/ with their bytes: none fails for want of a descriptor",
          .enabled(if: DescriptorLimitTests.ownHardLimit >= DescriptorLimitTests.hard, "the test process's hard limit is below 4,096"))
    func finishesThatFallBehindDoNotExhaustDescriptors() throws {
        // The soft limit first: it may not be above the hard one.
        try expectAllDone(limit: "-Sn 256 && ulimit -Hn \(Self.hard)", seed: 39_000)
    }

    @Test("with fsync on and a hard limit of 256 descriptors, 1,000 small jobs 16 at a time all end in done/ with their bytes: starts wait for finishes to close their parts, and none fails for want of a descriptor")
    func lowHardLimitMakesStartsWait() throws {
        try expectAllDone(limit: "-n 256", seed: 41_000)
    }

    @Test("with fsync on and only 48 descriptors, 300 small jobs 16 at a time all end in done/ with their bytes: claims ahead give up their parts, names, connections, claims and filings that found none wait and are tried again, none fails and no error is logged")
    func exhaustedDescriptorsMakeJobsWait() throws {
        // At 48 the parts of the 16 jobs claimed ahead once took every descriptor, and no
        // transfer ever connected.
        try expectAllDone(limit: "-n 48", seed: 43_000, jobs: 300, descriptorsRunOut: true)
    }

    @Test("with fsync on and only 48 descriptors, 300 small jobs 16 at a time where every fifth is answered 404 and every seventh asks for the name of the one before: each 404 ends in failed/, every other job in done/ with its bytes under its own name or the renamed one, and no part is left in the destination")
    func exhaustedDescriptorsKeepFailuresAndSharedNamesClean() throws {
        let jobs = 300
        let server = try TestHTTPServer()
        let bodies = Self.serveBodies(server, (0..<jobs).filter { $0 % 5 != 0 }, prefix: "s", size: 4_000, seed: 47_000)
        // Job i asks for out=o(i); every seventh asks for its predecessor's name.
        func wanted(_ index: Int) -> Int { index % 7 == 6 ? index - 1 : index }
        let fixture = try SpoolFixture(extraConfig: "fsync: true\nconcurrency: { total: 16, per_host: 16 }\n")
        for index in 0..<jobs {
            try fixture.drop("s\(index).url", server.url("/s\(index).bin") + "\n  out=o\(wanted(index)).bin\n")
        }
        let agent = try Self.start(["run", "--once"], limit: "-n 48", fixture)
        guard try Self.ends(agent, within: .seconds(120), fixture) else { return }
        // Exit 1: some jobs failed (docs/cli.md).
        #expect(agent.terminationStatus == 1, "\(fixture.logTail())")
        let missing = (0..<jobs).filter { $0 % 5 == 0 }
        #expect(fixture.jobs(in: "failed") == missing.map { "s\($0).url" }.sorted())
        for index in missing {
            #expect(try fixture.status("failed", "s\(index).url").downloads.first?.httpStatus == 404)
        }
        #expect(fixture.jobs(in: "done").count == jobs - missing.count)
        // Each done job's file holds its own body, under the name its status gives.
        var expected: Set<String> = []
        for index in 0..<jobs where index % 5 != 0 {
            let file = try fixture.status("done", "s\(index).url").downloads.first?.file ?? ""
            let name = URL(fileURLWithPath: file).lastPathComponent
            expected.insert(name)
            let own = "o\(wanted(index)).bin", renamed = "o\(wanted(index)).1.bin"
            #expect(name == own || name == renamed, "s\(index).url ended as \(name)")
            #expect(fixture.downloaded(name).map(TestHTTPServer.sha256Hex) == bodies[index].map(TestHTTPServer.sha256Hex),
                    "s\(index).url: \(name) does not hold its body")
        }
        #expect(expected.count == jobs - missing.count, "two done jobs name the same file")
        // Nothing else: no part of a failed job, none given up or set aside and then left; and no
        // state file (one written late, after its job was filed) left in the work folder.
        #expect(fixture.destinationNames() == expected.sorted())
        #expect(Self.workFiles(fixture).isEmpty, "\(Self.workFiles(fixture))")
        #expect(!fixture.log.contains("level=error"), "\(fixture.logTail())")
    }

    @Test("with fsync on and only 48 descriptors, 300 small jobs 16 at a time where every third is answered 503 and retried only an hour later: run --once exits 75 with those jobs in the work folder, each with a state file that says when it is retried, and every other job in done/ with its bytes")
    func exhaustedDescriptorsKeepWaitingJobsStates() throws {
        let jobs = 300
        let server = try TestHTTPServer()
        let bodies = Self.serveBodies(server, 0..<jobs, prefix: "w", size: 3_000, seed: 53_000) {
            $0 % 3 == 0 ? [.status(code: 503)] : []
        }
        let fixture = try SpoolFixture()
        try Self.useRetryConfig(fixture, retry: "{ attempts: 5, initial_delay: 1h, max_delay: 2h }", "once_wait: 1s\n")
        try Self.drop(jobs, prefix: "w", from: server, into: fixture)
        _ = try expectEveryThirdLeftWaiting(prefix: "w", bodies: bodies, jobs: jobs, fixture)
    }

    @Test("with fsync on and only 48 descriptors, 300 small jobs 16 at a time where every third loses its connection after 1,000 bytes and is retried only an hour later: run --once exits 75, each of those jobs waits with a state file and its .part holding the 1,000 bytes it got, and every other job is in done/ with its bytes")
    func exhaustedDescriptorsKeepPartialDownloads() throws {
        let jobs = 300
        let server = try TestHTTPServer()
        let bodies = Self.serveBodies(server, 0..<jobs, prefix: "p", size: 3_000, seed: 54_000) {
            $0 % 3 == 0 ? [.dropAfter(bytes: 1_000)] : []
        }
        let fixture = try SpoolFixture()
        try Self.useRetryConfig(fixture, retry: "{ attempts: 5, initial_delay: 1h, max_delay: 2h }", "once_wait: 1s\n")
        try Self.drop(jobs, prefix: "p", from: server, into: fixture)
        guard let waiting = try expectEveryThirdLeftWaiting(prefix: "p", bodies: bodies, jobs: jobs, fixture) else { return }
        // The bytes each got are kept for the retry to resume, not thrown away with a closed part.
        let discarded = waiting.filter { index in
            let part = FileManager.default.contents(atPath: fixture.destination + "/.p\(index).bin.part").map { [UInt8]($0) }
            return part != bodies[index].map { Array($0.prefix(1_000)) }
        }
        #expect(discarded.isEmpty, "\(discarded.count) waiting jobs without their 1,000 bytes, first .p\(discarded.first ?? -1).bin.part")
        // What lets the next run resume them: each part's record, naming the server's validator.
        let unrecorded = waiting.filter { index in
            let record = FileManager.default.contents(atPath: fixture.destination + "/.p\(index).bin.part.json")
            return record.map { String(decoding: $0, as: UTF8.self).contains("v1") } != true
        }
        #expect(unrecorded.isEmpty, "\(unrecorded.count) waiting parts without a record of their validator, first .p\(unrecorded.first ?? -1).bin.part")
    }

    @Test("with fsync on and only 48 descriptors, 300 small jobs 16 at a time where every third loses its first connection after 1,000 bytes and is retried a second later: all end in done/ with their bytes, and each retry asks only for what its part lacks (Range: bytes=1000-)")
    func partialDownloadsResumeAfterWaitingClosed() throws {
        let jobs = 300
        let server = try TestHTTPServer()
        let bodies = Self.serveBodies(server, 0..<jobs, prefix: "r", size: 3_000, seed: 55_000) {
            $0 % 3 == 0 ? [.times(1, .dropAfter(bytes: 1_000))] : []
        }
        let fixture = try SpoolFixture()
        try Self.useRetryConfig(fixture, retry: "{ attempts: 5, initial_delay: 1s, max_delay: 2s }")
        try Self.drop(jobs, prefix: "r", from: server, into: fixture)
        try runOnceExpectingNoFailure(limit: "-n 48", fixture, files: (0..<jobs).map { ("r\($0).bin", bodies[$0].map(TestHTTPServer.sha256Hex)) })
        // A retry that found no descriptor (for its digest's reader, its connection) is started
        // again, from the same byte.
        let notResumed = (0..<jobs).filter { $0 % 3 == 0 }.filter { index in
            let ranges = server.requests(to: "/r\(index).bin").map { $0.header("Range") }
            return ranges.first != .some(nil) || ranges.count < 2 || ranges.dropFirst().contains { $0 != "bytes=1000-" }
        }
        #expect(notResumed.isEmpty, "\(notResumed.count) retries did not resume, first r\(notResumed.first ?? -1).bin: \(server.requests(to: "/r\(notResumed.first ?? 0).bin"))")
    }

    @Test("with only 48 descriptors and one attempt allowed, 12 downloads of 4 MiB split in 1 MiB pieces, 32 connections at a time, all end in done/ with their sha256: sockets, digest readers and parts that found no descriptor wait without spending the attempt")
    func splitDownloadsWaitForDescriptors() throws {
        let server = try TestHTTPServer()
        var sums: [Int: String] = [:]
        for index in 0..<12 {
            let body = TestHTTPServer.randomBytes(4 << 20, seed: 45_000 + UInt64(index))
            sums[index] = TestHTTPServer.sha256Hex(body)
            server.serve("/b\(index).bin", body: body)
        }
        let fixture = try SpoolFixture()
        // `retry` of the fixture's config allows three attempts: this one allows one.
        try """
            spool: \(fixture.spool)
            destination: \(fixture.destination)
            agent_id: test-agent
            log_level: debug
            fsync: true
            retry: { attempts: 1 }
            concurrency: { total: 32, per_host: 32 }
            split: { connections: 8, min_size: 1MiB }

            """.write(toFile: fixture.configPath, atomically: true, encoding: .utf8)
        for index in 0..<12 { try fixture.drop("b\(index).url", server.url("/b\(index).bin") + "\n") }
        try runOnceExpectingNoFailure(limit: "-n 48", fixture, files: (0..<12).map { ("b\($0).bin", sums[$0]) })
    }

    @Test("an agent started with fewer descriptors than it needs (24) names the limit, claims nothing and exits at once: run --once 75 (its jobs left for a later run), a daemon 2 (its unit does not restart it)",
          arguments: [(["run", "--once"], Int32(75)), (["run"], Int32(2))])
    func tooFewDescriptorsRefusesToRun(arguments: [String], exit: Int32) throws {
        let fixture = try SpoolFixture()
        for index in 0..<3 { try fixture.drop("j\(index).url", "http://127.0.0.1:9/j\(index).bin\n") }
        let agent = try Self.start(arguments, limit: "-n 24", fixture)
        defer { if agent.isRunning { kill(agent.processIdentifier, SIGKILL); agent.waitUntilExit() } }
        #expect(try waitUntil(timeout: .seconds(30)) { !agent.isRunning })
        agent.waitUntilExit()
        #expect(agent.terminationStatus == exit, "\(fixture.logTail())")
        #expect(fixture.log.contains("too few file descriptors") && fixture.log.contains("limit=24"), "\(fixture.logTail())")
        #expect(fixture.jobs(in: "inbox") == ["j0.url", "j1.url", "j2.url"])
        #expect(fixture.jobs(in: "done").isEmpty && fixture.jobs(in: "failed").isEmpty)
    }

    /// The fixture's config with `retry`, fsync on and 16 transfers at a time, then `extra`.
    static func useRetryConfig(_ fixture: SpoolFixture, retry: String, _ extra: String = "") throws {
        let config = try fixture.writeAgentConfig(agentID: "test-agent", retry: retry,
                                                  "fsync: true\nconcurrency: { total: 16, per_host: 16 }\n" + extra)
        try FileManager.default.removeItem(atPath: fixture.configPath)
        try FileManager.default.moveItem(atPath: config, toPath: fixture.configPath)
    }

    /// Drops `PREFIXi.url` for `/PREFIXi.bin` of `server`, for each `i` below `count`.
    static func drop(_ count: Int, prefix: String, from server: TestHTTPServer, into fixture: SpoolFixture) throws {
        for index in 0..<count { _ = try fixture.drop("\(prefix)\(index).url", server.url("/\(prefix)\(index).bin") + "\n") }
    }

    /// `run --once` at 48 descriptors over `jobs` jobs `PREFIXi.url` of which every third waits an
    /// hour for its retry: it exits 75, none failed, every other one is done with its bytes, each
    /// waiting one has a state file with its retry, and no error is logged. The waiting indices;
    /// nil when the agent did not end.
    private func expectEveryThirdLeftWaiting(prefix: String, bodies: [Int: [UInt8]], jobs: Int,
                                             _ fixture: SpoolFixture) throws -> [Int]? {
        let agent = try Self.start(["run", "--once"], limit: "-n 48", fixture)
        guard try Self.ends(agent, within: .seconds(120), fixture) else { return nil }
        // 75: jobs are left waiting for their retry (docs/cli.md).
        #expect(agent.terminationStatus == 75, "\(fixture.logTail())")
        let waiting = (0..<jobs).filter { $0 % 3 == 0 }
        #expect(fixture.jobs(in: "failed").isEmpty)
        #expect(fixture.jobs(in: "done").count == jobs - waiting.count)
        // What the next run needs of each waiting job: its attempt counted and when it is due.
        let lost = waiting.filter { index in
            guard let state = fixture.stateJSON("\(prefix)\(index).url") else { return true }
            return state["retry_at"] == nil || state["attempts"] as? Int != 1
        }
        #expect(lost.isEmpty, "\(lost.count) waiting jobs without their retry in a state file, first \(prefix)\(lost.first ?? -1).url")
        let wrong = (0..<jobs).filter { $0 % 3 != 0 }.filter {
            fixture.downloaded("\(prefix)\($0).bin").map(TestHTTPServer.sha256Hex) != bodies[$0].map(TestHTTPServer.sha256Hex)
        }
        #expect(wrong.isEmpty, "\(wrong.count) files missing or wrong, first \(prefix)\(wrong.first ?? -1).bin")
        #expect(!fixture.log.contains("level=error"), "\(fixture.logTail())")
        return waiting
    }

    /// `run --once` under `ulimit LIMIT`: it exits 0, no job is in failed/, and each of `files`
    /// (a downloaded name and the sha256 its body has) is on disk with that sha256.
    private func runOnceExpectingNoFailure(limit: String, _ fixture: SpoolFixture, files: [(name: String, sha256: String?)]) throws {
        let agent = try Self.start(["run", "--once"], limit: limit, fixture)
        guard try Self.ends(agent, within: .seconds(120), fixture) else { return }
        #expect(agent.terminationStatus == 0, "\(fixture.logTail())")
        let failed = fixture.jobs(in: "failed")
        let firstError = failed.first.flatMap { try? fixture.status("failed", $0).error?.message } ?? ""
        #expect(failed.isEmpty, "\(failed.count) failed, first: \(firstError)")
        let wrong = files.filter { fixture.downloaded($0.name).map(TestHTTPServer.sha256Hex) != $0.sha256 }
        #expect(wrong.isEmpty, "\(wrong.count) files missing or wrong, first \(wrong.first?.name ?? "")")
    }

    /// `jobs` small jobs, 16 at a time with `fsync: true`, run once under `ulimit LIMIT`: every one
    /// ends in done/ with its bytes; unless `descriptorsRunOut`, no descriptor ran out either.
    private func expectAllDone(limit: String, seed: UInt64, jobs: Int = 1000, descriptorsRunOut: Bool = false) throws {
        let server = try TestHTTPServer()
        let bodies = Self.serveBodies(server, 0..<jobs, prefix: "s", size: 4_000, seed: seed)
        let fixture = try SpoolFixture(extraConfig: "fsync: true\nconcurrency: { total: 16, per_host: 16 }\n")
        for index in 0..<jobs { try fixture.drop("s\(index).url", server.url("/s\(index).bin") + "\n") }
        try runOnceExpectingNoFailure(limit: limit, fixture,
                                      files: (0..<jobs).map { ("s\($0).bin", bodies[$0].map(TestHTTPServer.sha256Hex)) })
        #expect(fixture.jobs(in: "done").count == jobs)
        // Parts given up or set aside for want of a descriptor are all reopened and published.
        #expect(fixture.destinationNames() == (0..<jobs).map { "s\($0).bin" }.sorted())
        if !descriptorsRunOut { #expect(!fixture.log.contains("Too many open files"), "\(fixture.logTail())") }
        #expect(!fixture.log.contains("level=error"), "\(fixture.logTail())")
    }

    @Test("an agent started with a soft descriptor limit below its hard one runs with the soft limit raised to the hard one",
          .enabled(if: DescriptorLimitTests.ownHardLimit >= DescriptorLimitTests.hard, "the test process's hard limit is below 4,096"))
    func softLimitIsRaised() throws {
        let hard = Self.hard
        let fixture = try SpoolFixture()
        // The soft limit first: it may not be above the hard one.
        let agent = try Self.start(["run"], limit: "-Sn 128 && ulimit -Hn \(hard)", fixture)
        defer {
            kill(agent.processIdentifier, SIGTERM)
            agent.waitUntilExit()
        }
        var line = ""
        let seen = try waitUntil(timeout: .seconds(20)) {
            line = (try? String(contentsOfFile: "/proc/\(agent.processIdentifier)/limits", encoding: .utf8))?
                .split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
            // The shell's own limits until it execs the agent; the agent's once it has raised them.
            return fixture.log.contains("agent started") || line.split(separator: " ").dropFirst(3).first == "\(hard)"
        }
        #expect(seen, "\(line)\n\(fixture.logTail())")
        let fields = line.split(separator: " ").map(String.init)
        #expect(fields.count >= 5 && fields[3] == "\(hard)" && fields[4] == "\(hard)", "\(line)")
    }
}
