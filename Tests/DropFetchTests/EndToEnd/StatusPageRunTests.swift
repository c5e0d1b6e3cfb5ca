import Foundation
import Glibc
import Testing

/// Issue 28, items 3 and 4: the agent's `status_page` and `status.json` are replaced whole while
/// bytes flow (a reader polling them never sees half a file), and an idle agent writes neither.
@Suite("Status page written by the agent")
struct StatusPageRunTests {
    /// Counts the files created or moved into a folder (inotify(7): IN_CREATE, IN_MOVED_TO,
    /// IN_CLOSE_WRITE), for the idle check: a page write creates a temp file and renames it.
    final class FolderEvents {
        private let descriptor: Int32

        init(_ folder: String) throws {
            descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            guard descriptor >= 0,
                  inotify_add_watch(descriptor, folder, UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY)) >= 0
            else { throw FixtureError.badStatus("inotify on \(folder)") }
        }

        deinit { close(descriptor) }

        /// The events that arrive within `duration`.
        func count(during duration: Duration) -> Int {
            let deadline = ContinuousClock.now.advanced(by: duration)
            var events = 0
            var buffer = [UInt8](repeating: 0, count: 4096)
            while ContinuousClock.now < deadline {
                var watch = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let left = ContinuousClock.now.duration(to: deadline).components
                _ = poll(&watch, 1, Int32(max(1, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000)))
                while true {
                    let length = read(descriptor, &buffer, buffer.count)
                    guard length > 0 else { break }
                    var offset = 0
                    while offset < length {
                        let nameLength = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 12, as: UInt32.self) }
                        events += 1
                        offset += 16 + Int(nameLength)
                    }
                }
            }
            return events
        }
    }

    @Test("while a download runs, every read of the page is whole HTML and every status.json parses; idle, nothing is written")
    func atomicWhileBusyAndSilentWhenIdle() throws {
        let server = try TestHTTPServer()
        // About 3 s of data: a page each second while it runs.
        server.serve("/slow.bin", body: TestHTTPServer.randomBytes(300_000, seed: 28_001),
                     faults: [.drip(bytesPerChunk: 10_000, interval: .milliseconds(100))])
        let fixture = try SpoolFixture()
        let www = fixture.root.path + "/www"
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        let page = www + "/index.html"
        let json = www + "/status.json"
        // A rescan every second wakes the idle agent: none of those wake-ups may write the page.
        _ = try fixture.writeFullConfig("config.yaml", "status_page: \(page)\nscan_interval: 1s\n")
        try fixture.startDaemon()
        defer { _ = try? fixture.stopDaemon() }
        try fixture.drop("slow.url", server.url("/slow.bin") + "\n")

        var versions: Set<String> = []
        var reads = 0
        var sawRunning = false
        var torn: [String] = []
        let finished = try waitUntil(timeout: .seconds(30), interval: .milliseconds(1)) {
            if let text = try? String(contentsOfFile: page, encoding: .utf8) {
                reads += 1
                if !(text.hasPrefix("<!DOCTYPE html>\n") && text.hasSuffix("</html>\n")) { torn.append(String(text.suffix(80))) }
                versions.insert(text)
                if text.contains("<tr data-job=\"slow.url\" data-state=\"running\">") { sawRunning = true }
            }
            if let data = FileManager.default.contents(atPath: json), (try? JSONSerialization.jsonObject(with: data)) == nil {
                torn.append("status.json: " + String(decoding: data.suffix(80), as: UTF8.self))
            }
            return fixture.jobs(in: "done") == ["slow.url"]
        }
        #expect(finished, "\(fixture.log.suffix(3000))")
        #expect(torn.isEmpty, "partial files seen: \(torn.prefix(3))")
        #expect(sawRunning, "no page showed the download running")
        #expect(versions.count >= 3, "only \(versions.count) versions in \(reads) reads: the page was not rewritten as bytes flowed")

        // The last page shows the job done; after that the agent is idle.
        #expect(try waitUntil(timeout: .seconds(10)) {
            let text = (try? String(contentsOfFile: page, encoding: .utf8)) ?? ""
            return text.contains("<tr data-job=\"slow.url\" data-state=\"done\">") && text.contains("Nothing is downloading.")
        })
        let report = try #require(fixture.jsonObject(at: "../www/status.json"))
        #expect((report["recent"] as? [[String: Any]])?.first?["job"] as? String == "slow.url")
        #expect((report["active"] as? [Any])?.isEmpty == true)

        // Quiet for longer than the write interval, so no change is left to write; then idle seconds count no write.
        let events = try FolderEvents(www)
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(1)) { events.count(during: .milliseconds(1500)) == 0 })
        // An idle minute (issue 28): a rescan every second wakes the agent 60 times, none of them writes.
        #expect(events.count(during: .seconds(60)) == 0, "the idle agent wrote into the page's folder during an idle minute")
        #expect(fixture.daemonIsRunning)
        #expect(try fixture.stopDaemon() == 0)
        // Its last page says it stopped.
        let last = try String(contentsOfFile: page, encoding: .utf8)
        #expect(last.contains("<tr data-job=\"test-agent\" data-state=\"stopped\">"), "\(last.prefix(3000))")
    }
}
