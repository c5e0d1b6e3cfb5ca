import DropFetch
import Foundation
import Glibc
import Testing

/// The two mounts of one shared volume the Distributed suite runs on, from the environment:
/// `DROPFETCH_TEST_SPOOL_A` and `DROPFETCH_TEST_SPOOL_B` (folders on two mounts of one
/// volume; `make test-distributed` mounts a GlusterFS volume twice and sets them). Nil when unset.
enum DistributedVolume {
    static var mounts: [String]? {
        let environment = ProcessInfo.processInfo.environment
        guard let a = environment["DROPFETCH_TEST_SPOOL_A"], !a.isEmpty,
              let b = environment["DROPFETCH_TEST_SPOOL_B"], !b.isEmpty else { return nil }
        return [a, b]
    }
}

/// DESIGN.md §1 on a real distributed file system (issue 9): agent a reaches the spool and the
/// destination through one client mount, agent b through another, as two hosts would. On
/// GlusterFS flock(2) works across mounts, renameat2(RENAME_NOREPLACE) is EINVAL (so the spool
/// falls back to link(2) and rename(2), see `FileSystem.moveNoReplace` and `Spool.claim`),
/// inotify does not see what the other mount does (the agents find each other's changes by their
/// rescans, `scan_interval: 1s`), and a replaced file can read stale through the other mount for
/// up to a second.
@Suite("Agents on two mounts of one distributed volume (GlusterFS), end to end", .serialized,
       .enabled(if: DistributedVolume.mounts != nil, "needs DROPFETCH_TEST_SPOOL_A and _B: run `make test-distributed`"))
struct DistributedTests {
    static var mounts: [String] { DistributedVolume.mounts ?? [] }

    @Test("200 jobs of one name (same.url, out=same.bin) dropped at once, agents a and b each on its own mount: each done once, its own bytes, no record lost or overwritten",
          .bug(id: "shared-spool-records", "check-then-rename on GlusterFS lost job files and status files"))
    func sameNameBurst() throws {
        let began = ContinuousClock.now
        let server = try TestHTTPServer()
        let count = 200
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<count {
            let body = TestHTTPServer.randomBytes(1_000 + (index * 611) % 9_000, seed: 9_900 + UInt64(index))
            let path = String(format: "/s/%03d.bin", index)
            server.serve(path, body: body, faults: [.delay(.milliseconds(20))])
            bodies[path] = body
        }
        let fixture = try SpoolFixture(on: Self.mounts)
        // One name for every job file and every output: each job is inbox/bNNN/same.url (a routing
        // folder of its own, the default class), so records collide in done/ as outputs do in the
        // destination, and the two agents race for both.
        for index in 0..<count {
            try fixture.dropSettled("same.url", server.url(String(format: "/s/%03d.bin", index)) + "\n  out=same.bin\n",
                                    folder: String(format: "b%03d", index))
        }
        let limits = "concurrency: { total: 8, per_host: 8 }\n"
        let configA = try fixture.writeAgentConfig(agentID: "a", view: 0, scanInterval: "1s", limits)
        let configB = try fixture.writeAgentConfig(agentID: "b", view: 1, scanInterval: "1s", limits)
        let logA = fixture.root.path + "/agent-a.log"
        let logB = fixture.root.path + "/agent-b.log"
        let agentA = try AgentProcess(["run", "--once"], config: configA, log: logA, in: fixture, heldAtStart: true)
        let agentB = try AgentProcess(["run", "--once"], config: configB, log: logB, in: fixture, heldAtStart: true)
        try agentA.start()
        try agentB.start()
        try agentA.release()
        try agentB.release()
        #expect(try agentA.wait(timeout: .seconds(180)) == .exited(0), "\(MultiAgentTests.text(logA))")
        #expect(try agentB.wait(timeout: .seconds(180)) == .exited(0), "\(MultiAgentTests.text(logB))")

        let problems = Self.burstProblems(fixture, bodies: bodies, jobName: "same.url", file: "same.bin")
        #expect(problems.isEmpty, "\(problems.prefix(20))\n\(MultiAgentTests.text(logA, lines: 20))\n\(MultiAgentTests.text(logB, lines: 20))")
        var byAgent: [String: Int] = [:]
        for record in fixture.jobs(in: "done") {
            byAgent[fixture.statusObject("done", record)?["agent"] as? String ?? "?", default: 0] += 1
        }
        var fetches: [String: Int] = [:]
        for request in server.completedRequests() where request.status == 200 && request.bodyBytesSent == bodies[request.path]?.count {
            fetches[request.path, default: 0] += 1
        }
        #expect(fetches.count == count && fetches.values.allSatisfy { $0 == 1 },
                "fetched whole more than once: \(fetches.filter { $0.value > 1 }.keys.sorted())")
        print("distributed same-name burst: \(byAgent.sorted { $0.key < $1.key }) in \(CrashMatrixTests.seconds(ContinuousClock.now - began)) s")
        #expect(Set(byAgent.keys) == ["a", "b"], "both agents should have done some of the jobs: \(byAgent)")
    }

    /// The end state of a burst of jobs that all file as `jobName` and all write `file`: one
    /// record per job (`x.url`, `x.N.url`) in done/, each with its status, naming its own URL,
    /// whose file holds that URL's bytes and the status's sha256; every file of one job only;
    /// nothing else in the destination, in failed/, left in the inbox or in a work folder.
    static func burstProblems(_ fixture: SpoolFixture, bodies: [String: [UInt8]], jobName: String, file: String) -> [String] {
        var problems: [String] = []
        let records = fixture.jobs(in: "done")
        if records.count != bodies.count { problems.append("\(records.count) records in done/ for \(bodies.count) jobs") }
        var seenPaths: [String: String] = [:]
        var files: [String: String] = [:]
        for record in records {
            guard let status = fixture.statusObject("done", record) else {
                problems.append("done/\(record) has no readable status file")
                continue
            }
            if status["job"] as? String != jobName { problems.append("done/\(record): job \(status["job"] ?? "nil")") }
            if status["state"] as? String != "done" { problems.append("done/\(record): state \(status["state"] ?? "nil")") }
            let downloads = StatusFields.downloads(status)
            guard downloads.count == 1, let download = downloads.first,
                  let url = download["url"] as? String, let path = URLComponents(string: url)?.path, let body = bodies[path] else {
                problems.append("done/\(record): downloads \(StatusFields.downloads(status))")
                continue
            }
            if let other = seenPaths.updateValue(record, forKey: path) {
                problems.append("\(path) filed twice: done/\(other) and done/\(record)")
            }
            let sha256 = TestHTTPServer.sha256Hex(body)
            if download["sha256"] as? String != sha256 { problems.append("done/\(record): sha256 is not \(path)'s") }
            guard let written = download["file"] as? String else {
                problems.append("done/\(record): no file")
                continue
            }
            let local = fixture.canonical(written)
            if let other = files.updateValue(record, forKey: local) {
                problems.append("\(local) is the file of done/\(other) and done/\(record)")
            }
            let name = (local as NSString).lastPathComponent
            if !(name == file || (name.hasPrefix(String(file.dropLast(4)) + ".") && name.hasSuffix(".bin"))) {
                problems.append("done/\(record): unexpected file name \(written)")
            }
            guard let data = FileManager.default.contents(atPath: local) else {
                problems.append("done/\(record): \(written) is missing")
                continue
            }
            if data != Data(body) { problems.append("done/\(record): \(written) holds \(data.count) bytes that are not \(path)'s \(body.count)") }
        }
        for path in bodies.keys where seenPaths[path] == nil { problems.append("\(path) has no record in done/") }
        let present = Set(SpoolAudit(fixture: fixture).destinationFiles().map { fixture.destination + "/" + $0 })
        for extra in present.subtracting(files.keys).sorted() { problems.append("left in the destination: \(extra)") }
        for record in fixture.jobs(in: "failed") {
            let status = fixture.statusObject("failed", record)
            let error = status?["error"] as? [String: Any]
            problems.append("failed/\(record): \(StatusFields.firstDownload(status)["url"] ?? "?") \(error?["kind"] ?? "?"): \(error?["message"] ?? "?")")
        }
        problems += SpoolAudit(fixture: fixture).leftoversInSpool()
        problems += SpoolAudit(fixture: fixture).writesOutside()
        return problems
    }

    @Test("agents a and b on two mounts, total: 2, 60 slow jobs, b started 1 s later: b does at least a quarter, each job done once")
    func boundedClaiming() throws {
        try SharedSpoolTests.secondAgentGetsItsShare(try SpoolFixture(on: Self.mounts), views: (0, 1), scanInterval: "1s",
                                                     seed: 9_870, timeout: .seconds(60), label: "distributed")
    }

    @Test("agent a on one mount killed with kill -9 while agent b runs on the other (scan_interval: 1s): b adopts a's jobs within 10 s, each done once")
    func liveAdoptionAfterKill() throws {
        try SharedSpoolTests.liveAgentAdoptsTheDead(try SpoolFixture(on: Self.mounts), views: (0, 1), scanIntervalA: "1s",
                                                    acrossMounts: true, seed: 9_880, finishWithin: .seconds(40),
                                                    label: "distributed live adoption")
    }

    @Test("agents a and b on two mounts: a job of the URL a fetches is b's duplicate of it (one GET)")
    func duplicateAcrossMounts() throws {
        try DuplicatesTests.duplicateAcrossAgents(try SpoolFixture(on: Self.mounts), views: (0, 1))
    }

    @Test("agents a and b on two mounts purge at once: every old record removed once, nothing else lost")
    func purgesAtOnceAcrossMounts() throws {
        try HistoryEndToEndTests.purgesAtOnce(try SpoolFixture(on: Self.mounts), views: (0, 1))
    }
}
