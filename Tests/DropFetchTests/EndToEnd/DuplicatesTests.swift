import DropFetch
import Foundation
import Testing

/// `duplicates: skip` end to end (issue 38): what the server was asked, which folder each job is
/// in, the status fields, the files on disk and the hook that ran.
@Suite("Duplicates, end to end")
struct DuplicatesTests {
    private func fixture(_ extra: String = "duplicates: skip\n") throws -> (SpoolFixture, hookRecord: String) {
        let fixture = try SpoolFixture(extraConfig: extra)
        let record = fixture.root.path + "/hooks"
        try FileManager.default.createDirectory(atPath: record, withIntermediateDirectories: true)
        let script = record + "/hook.sh"
        try #"echo "$DROPFETCH_JOB $DROPFETCH_STATE" >> "$1/done.log""#.write(toFile: script, atomically: false, encoding: .utf8)
        try fixture.writeConfig(extra + "hooks:\n  on_done: [/bin/sh, \(script), \(record)]\n")
        return (fixture, record)
    }

    private func gets(_ server: TestHTTPServer, _ path: String) -> Int {
        server.completedRequests().filter { $0.path == path && $0.method == "GET" }.count
    }

    @Test("the same URL written otherwise (case, default port, fragment) is filed as a duplicate: one GET, on_done runs, the file is the first one's")
    func secondJobIsADuplicate() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(40_000, seed: 3801)
        server.serve("/d/a.bin", body: body)
        let (fixture, hooks) = try fixture()
        try fixture.drop("first.url", server.url("/d/a.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let port = URLComponents(string: server.url("/"))!.port!
        try fixture.drop("second.url", "HTTP://127.0.0.1:\(port)/d/a.bin#again\n  out=other-name.bin\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")

        #expect(gets(server, "/d/a.bin") == 1)
        #expect(fixture.jobs(in: "done") == ["first.url", "second.url"])
        let first = try fixture.status("done", "first.url")
        let second = try fixture.statusJSON("done", "second.url")
        #expect(second["duplicate_of"] as? String == "first.url")
        #expect(second["attempts"] as? Int == 0 && second["state"] as? String == "done")
        let entry = try #require((second["downloads"] as? [[String: Any]])?.first)
        #expect(entry["file"] as? String == first.downloads[0].file)
        #expect(entry["http_status"] is NSNull)
        #expect((entry["bytes"] as? NSNumber)?.int64Value == 40_000)
        #expect(entry["sha256"] as? String == TestHTTPServer.sha256Hex(body))
        #expect(fixture.destinationNames() == ["a.bin"], "no second copy")
        #expect(try fixture.statusJSON("done", "first.url")["duplicate_of"] == nil)
        #expect(try waitUntil { (try? String(contentsOfFile: hooks + "/done.log", encoding: .utf8))?.contains("second.url done") == true })
    }

    @Test("a job of a URL another job is fetching waits for it, then is a duplicate: one GET for both")
    func waitsForTheJobInFlight() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(600_000, seed: 3802)
        server.serve("/d/slow.bin", body: body, faults: [.drip(bytesPerChunk: 64 << 10, interval: .milliseconds(30))])
        let (fixture, _) = try fixture()
        try fixture.drop("one.url", server.url("/d/slow.bin") + "\n")
        try fixture.drop("two.url", server.url("/d/slow.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(gets(server, "/d/slow.bin") == 1)
        #expect(fixture.jobs(in: "done") == ["one.url", "two.url"])
        let duplicates = try ["one.url", "two.url"].map { try fixture.statusJSON("done", $0)["duplicate_of"] as? String }
        #expect(duplicates.compactMap { $0 }.count == 1, "\(duplicates)")
        #expect(fixture.downloaded("slow.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("a deleted file, another checksum, duplicates=fetch or duplicates: off mean a fetch; a matching checksum a duplicate")
    func whatMeansAFetch() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(20_000, seed: 3803)
        server.serve("/d/c.bin", body: body)
        let (fixture, _) = try fixture()
        try fixture.drop("base.url", server.url("/d/c.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let right = TestHTTPServer.sha256Hex(body)
        let wrong = TestHTTPServer.sha256Hex(Array(body.reversed()))
        try fixture.drop("right-sum.url", server.url("/d/c.bin") + "\n  checksum=sha-256=\(right)\n")
        try fixture.drop("wrong-sum.url", server.url("/d/c.bin") + "\n  checksum=sha-256=\(wrong)\n  out=w.bin\n")
        try fixture.drop("asked.url", "duplicates=fetch\n" + server.url("/d/c.bin") + "\n  out=asked.bin\n")
        #expect(try fixture.runOnce() == 1, "the wrong checksum fails after its fetch: \(fixture.log)")
        #expect(["base.url", "asked.url"].contains(try fixture.statusJSON("done", "right-sum.url")["duplicate_of"] as? String ?? ""))
        #expect(fixture.jobs(in: "failed") == ["wrong-sum.url"])
        // Each attempt of the wrong checksum fetched the file again.
        let wrongAttempts = try #require(try fixture.statusJSON("failed", "wrong-sum.url")["attempts"] as? Int)
        #expect(try fixture.statusJSON("done", "asked.url")["duplicate_of"] == nil)
        #expect(fixture.downloaded("asked.bin").map(TestHTTPServer.sha256Hex) == right)
        #expect(gets(server, "/d/c.bin") == 2 + wrongAttempts, "base, asked and each try of wrong-sum")

        // The earlier file gone: the next job fetches.
        let baseFile = try #require(try fixture.status("done", "base.url").downloads[0].file)
        for name in fixture.destinationNames() { try FileManager.default.removeItem(atPath: fixture.destination + "/" + name) }
        #expect(!FileManager.default.fileExists(atPath: baseFile))
        try fixture.drop("after-delete.url", server.url("/d/c.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(try fixture.statusJSON("done", "after-delete.url")["duplicate_of"] == nil)
        #expect(fixture.downloaded("c.bin").map(TestHTTPServer.sha256Hex) == right)
        #expect(gets(server, "/d/c.bin") == 3 + wrongAttempts)
    }

    @Test("without duplicates: skip a job fetches, and duplicates=skip in a job file asks for the check")
    func offByDefault() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(10_000, seed: 3804)
        server.serve("/d/o.bin", body: body)
        let (fixture, _) = try fixture("")
        try fixture.drop("a.url", server.url("/d/o.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        try fixture.drop("b.url", server.url("/d/o.bin") + "\n  out=b.bin\n")
        try fixture.drop("c.url", "duplicates=skip\n" + server.url("/d/o.bin") + "\n  out=c.bin\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(try fixture.statusJSON("done", "b.url")["duplicate_of"] == nil)
        // b.url fetched the same URL while c waited for it: either earlier job is the one it duplicates.
        #expect(["a.url", "b.url"].contains(try fixture.statusJSON("done", "c.url")["duplicate_of"] as? String ?? ""))
        #expect(gets(server, "/d/o.bin") == 2, "a and b")
    }

    @Test("two agents on one spool: a job of a URL the other agent is fetching waits for it, then is its duplicate; one GET")
    func anotherAgentsJobInFlight() throws {
        try Self.duplicateAcrossAgents(try SpoolFixture(), views: (0, 0))
    }

    /// Agent a (on `views.0`) fetches a slow file; a job of the same URL goes to agent b (on
    /// `views.1`), which waits for a's job and files its own as a duplicate of it: one GET in all.
    static func duplicateAcrossAgents(_ fixture: SpoolFixture, views: (Int, Int)) throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(2_500_000, seed: 3806)
        server.serve("/d/shared.bin", body: body, faults: [.drip(bytesPerChunk: 64 << 10, interval: .milliseconds(60))])
        // Agent a runs one job at a time: the second job is left for agent b.
        let configA = try fixture.writeAgentConfig(agentID: "a", view: views.0, "duplicates: skip\nconcurrency: { total: 1, per_host: 1 }\n")
        let configB = try fixture.writeAgentConfig(agentID: "b", view: views.1, "duplicates: skip\n")
        let agentA = try AgentProcess(["run"], config: configA, log: fixture.logPath, in: fixture)
        try agentA.start()
        try fixture.drop("first.url", server.url("/d/shared.bin") + "\n")
        #expect(try waitUntil { (fixture.fileSize(fixture.destination + "/.shared.bin.part") ?? 0) > 100_000 }, "\(fixture.log)")
        try fixture.drop("second.url", server.url("/d/shared.bin") + "\n  out=second.bin\n")

        #expect(try AgentProcess.run(["run", "--once"], config: configB, log: fixture.logPath, in: fixture) == .exited(0),
                "\(fixture.log)")
        #expect(try agentA.stop() == .exited(0))

        #expect(fixture.jobs(in: "done") == ["first.url", "second.url"])
        #expect(try fixture.status("done", "first.url").agent == "a")
        let second = try fixture.statusJSON("done", "second.url")
        #expect(second["agent"] as? String == "b" && second["duplicate_of"] as? String == "first.url")
        #expect(server.completedRequests().filter { $0.path == "/d/shared.bin" }.count == 1)
        #expect(fixture.downloaded("shared.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(!fixture.destinationNames().contains("second.bin"))
    }

    @Test("a forged index line pointing at a record whose file is not there is at most a fetch")
    func forgedIndexIsAFetch() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(12_000, seed: 3805)
        server.serve("/d/f.bin", body: body)
        let (fixture, _) = try fixture()
        // A forged record in done/ naming a file that does not exist, and index lines of every shape.
        try fixture.drop("victim.url", server.url("/d/f.bin") + "\n")
        let forged = """
            {"schema":1,"job":"ghost.url","state":"done","class":"default","priority":0,"agent":"evil",
             "submitted":"2026-01-01T00:00:00Z","started":null,"finished":"2026-01-01T00:00:00Z","attempts":1,
             "downloads":[{"url":"\(server.url("/d/f.bin"))","file":"\(fixture.destination)/f.bin","state":"done",
             "bytes":12000,"http_status":200,"resumed_from":0,"sha256":null,"seconds":0,"error":null}],"error":null}
            """
        try forged.write(toFile: fixture.spool + "/done/ghost.status.json", atomically: false, encoding: .utf8)
        try "".write(toFile: fixture.spool + "/done/ghost.url", atomically: false, encoding: .utf8)
        // The key of the victim's URL (URLKey: the first 32 hex digits of the normalized URL's SHA-256).
        let key = String(TestHTTPServer.sha256Hex(Array(server.url("/d/f.bin").utf8)).prefix(32))
        let keyLine = "garbage line\n" + String(repeating: "z", count: 2000) + "\n\(key) ghost.url\n\(key) ../escape.url\n"
        try ("dropfetch-done-urls 1\n" + keyLine).write(toFile: fixture.spool + "/.done-urls.evil", atomically: false, encoding: .utf8)
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(try fixture.statusJSON("done", "victim.url")["duplicate_of"] == nil)
        #expect(fixture.downloaded("f.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(gets(server, "/d/f.bin") == 1)
    }
}
