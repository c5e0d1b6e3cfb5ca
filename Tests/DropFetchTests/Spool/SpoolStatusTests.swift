import Foundation
import Testing
@testable import DropFetch

/// `dropfetch status` and the status page read the spool (SpoolStatus.read): a job held before it
/// ever ran has no state to show, so its class comes from its job file under the config.
@Suite("Spool status of held jobs")
struct SpoolStatusTests {
    @Test("a job held before it ran is counted under the class its job file gets, default without classes")
    func heldBeforeRunning() throws {
        let root = FileManager.default.temporaryDirectory.path + "/dropfetch-status-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        for folder in ["inbox", "hold", "work", "done", "failed"] {
            try FileManager.default.createDirectory(atPath: root + "/spool/" + folder, withIntermediateDirectories: true)
        }
        try "https://h.example/disc.iso\n".write(toFile: root + "/spool/hold/disc.url", atomically: true, encoding: .utf8)
        try "priority=4\nhttps://h.example/notes.txt\n".write(toFile: root + "/spool/hold/notes.url", atomically: true, encoding: .utf8)
        try "not a job\n".write(toFile: root + "/spool/hold/broken.url", atomically: true, encoding: .utf8)
        var config = Config()
        config.spool = root + "/spool"
        var iso = Config.JobClass(name: "iso")
        iso.match = Config.ClassMatch(url: "*.iso")
        config.classes = [iso]

        let status = SpoolStatus.read(config: config)
        #expect(status.held == ["broken.url", "disc.url", "notes.url"])
        #expect(status.heldStates["disc.url"]?.className == "iso")
        #expect(status.heldStates["notes.url"]?.className == "default")
        #expect(status.heldStates["notes.url"]?.priority == 4)
        #expect(status.heldStates["notes.url"]?.downloads.first?.state == .queued)
        #expect(status.heldStates["broken.url"] == nil, "nothing to classify in a file that does not parse")
        let page = StatusPage.read(config: config, throughput: nil, writer: "test").html()
        #expect(!page.contains("unclassified"))
        #expect(page.contains(">iso<") && page.contains(">default<"), "the per-class table names both classes")
    }
}
