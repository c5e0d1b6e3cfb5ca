import Foundation
import Glibc
import Testing

/// docs/spool.md settle rule (issue 9, item 5): a job file found by a scan — at start-up, on a
/// rescan, after an inotify queue overflow — is claimed only when settled (mtime 2 s old, or
/// `IN_CLOSE_WRITE` seen). A file written in place is never claimed half-written, and `run --once`
/// leaves a file still changing at the end of `once_wait` in the inbox and exits 75.
@Suite("Job files written in place are claimed only when settled, end to end", .serialized)
struct SettleTests {
    /// A job file written in place through one descriptor, the way a slow editor or `cat > x.url` does.
    final class SlowWriter {
        let handle: FileHandle

        init(_ path: String) throws {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw LifecycleError.unexpected("cannot create \(path)")
            }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        }

        func write(_ text: String) throws { try handle.write(contentsOf: Data(text.utf8)) }
        func close() throws { try handle.close() }
    }

    static let body = TestHTTPServer.randomBytes(40_000, seed: 9_800)

    /// The job's text cut in the middle of the URL's path: what a scan would read half-way.
    static func halves(_ server: TestHTTPServer) -> (String, String) {
        let text = server.url("/settle/complete-name.bin") + "\n"
        let cut = text.index(text.endIndex, offsetBy: -14)
        return (String(text[..<cut]), String(text[cut...]))
    }

    @Test("run --once started while a job file is half-written in place: the job is done with the full URL")
    func onceWaitsForAHalfWrittenFile() throws {
        let server = try TestHTTPServer()
        server.serve("/settle/complete-name.bin", body: Self.body)
        let fixture = try SpoolFixture()
        let (first, rest) = Self.halves(server)
        let writer = try SlowWriter(fixture.spool + "/inbox/halfway.url")
        try writer.write(first)

        let agent = try AgentProcess(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture)
        try agent.start()
        #expect(try waitUntil { FileManager.default.fileExists(atPath: fixture.spool + "/work/test-agent/.lock") || !agent.isRunning })
        // The writer is slow: the rest comes 0.7 s after the agent took its lock (and scanned the inbox).
        Thread.sleep(forTimeInterval: 0.7)
        try writer.write(rest)
        try writer.close()

        #expect(try agent.wait(timeout: .seconds(30)) == .exited(0), "\(fixture.logTail())")
        #expect(server.completedRequests().map(\.path) == ["/settle/complete-name.bin"],
                "the half-written URL was fetched: \(server.completedRequests())")
        expectDone(fixture, "halfway.url", body: Self.body)
        let url = StatusFields.firstDownload(fixture.statusObject("done", "halfway.url"))["url"] as? String
        #expect(url == server.url("/settle/complete-name.bin"))
        #expect(fixture.jobs(in: "failed").isEmpty)
    }

    @Test("run --once with once_wait: 1s and a job file that keeps changing: it stays in the inbox, exit 75, nothing fetched")
    func onceLeavesAFileStillChanging() throws {
        let server = try TestHTTPServer()
        server.serve("/settle/complete-name.bin", body: Self.body)
        let fixture = try SpoolFixture(extraConfig: "once_wait: 1s\n")
        let writer = try SlowWriter(fixture.spool + "/inbox/growing.url")
        try writer.write(server.url("/settle/complete-name.bin") + "\n")

        let agent = try AgentProcess(["run", "--once"], config: fixture.configPath, log: fixture.logPath, in: fixture)
        try agent.start()
        // The writer appends a comment line every 200 ms for as long as the agent runs (at most 15 s).
        var lines = 0
        let ended = try waitUntil(timeout: .seconds(15), interval: .milliseconds(200)) {
            guard agent.isRunning else { return true }
            lines += 1
            try writer.write("# still writing \(lines)\n")
            return false
        }
        try writer.close()
        #expect(ended, "run --once did not give up on the file after once_wait")
        #expect(try agent.wait(timeout: .seconds(5)) == .exited(75), "\(fixture.logTail())")
        #expect(fixture.jobs(in: "inbox") == ["growing.url"])
        #expect(server.requests.isEmpty, "a file still being written was run: \(server.requests)")
    }

    static func maxQueuedEvents() -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)) ?? ""
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 16_384
    }

    /// Opens and closes a dot-file `count` times: one IN_CLOSE_WRITE each (a dot-file is never a job).
    static func makeEvents(in folder: String, count: Int) -> Bool {
        let path = folder + "/.noise"
        for _ in 0..<count {
            let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { return false }
            close(fd)
        }
        return true
    }
}
