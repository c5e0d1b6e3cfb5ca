import DropFetch
import Foundation
import Testing

/// The spool and destinations the config names may be reached through symlinks (a mount point
/// linked into place, `/srv/downloads -> /mnt/disk2/downloads`): the admin wrote those paths.
/// Below them, a symlink is still refused (docs/security.md; `SymlinkSwapTests`).
@Suite("Spool and destinations behind symlinks, end to end")
struct SymlinkedRootsTests {
    @Test("spool, destination and a class's destination behind symlinks (one a parent, one the folder itself, created where missing): add, hold, release and run --once work; files land in the real folders and status files name them as configured")
    func rootsBehindSymlinks() throws {
        let server = try TestHTTPServer()
        let first = TestHTTPServer.randomBytes(9_000, seed: 371), second = TestHTTPServer.randomBytes(11_000, seed: 372)
        server.serve("/one.bin", body: first)
        server.serve("/two.bin", body: second)
        let fixture = try SpoolFixture()
        let root = fixture.root.path
        // links -> disk (a symlinked parent: spool/ and media/ are created through it);
        // downloads -> disk/dl (the destination folder itself a symlink).
        try FileManager.default.createDirectory(atPath: root + "/disk/dl", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/links", withDestinationPath: root + "/disk")
        try FileManager.default.createSymbolicLink(atPath: root + "/dl-link", withDestinationPath: root + "/disk/dl")
        let config = root + "/linked.yaml"
        try """
            spool: \(root)/links/spool
            destination: \(root)/dl-link
            agent_id: test-agent
            classes:
              - name: media
                match: { url: "*/two.bin" }
                destination: \(root)/links/media

            """.write(toFile: config, atomically: true, encoding: .utf8)

        #expect(try fixture.runCLI(["add", server.url("/one.bin")], config: config) == 0, "\(fixture.log)")
        #expect(try fixture.runCLI(["add", server.url("/two.bin")], config: config) == 0, "\(fixture.log)")
        #expect(try fixture.runCLI(["hold", "two.bin"], config: config) == 0, "\(fixture.log)")
        #expect(FileManager.default.fileExists(atPath: root + "/disk/spool/hold/two.bin.url"))
        #expect(try fixture.runCLI(["release", "two.bin"], config: config) == 0, "\(fixture.log)")
        #expect(try fixture.runCLI(["run", "--once"], config: config) == 0, "\(fixture.log)")

        #expect(FileManager.default.contents(atPath: root + "/disk/dl/one.bin").map { TestHTTPServer.sha256Hex(Array($0)) }
                == TestHTTPServer.sha256Hex(first))
        #expect(FileManager.default.contents(atPath: root + "/disk/media/two.bin").map { TestHTTPServer.sha256Hex(Array($0)) }
                == TestHTTPServer.sha256Hex(second))
        let done = (try? FileManager.default.contentsOfDirectory(atPath: root + "/disk/spool/done"))?.sorted()
        #expect(done == ["one.bin.status.json", "one.bin.url", "two.bin.status.json", "two.bin.url"], "\(fixture.log)")
        let status = { (name: String) -> String? in
            let data = FileManager.default.contents(atPath: root + "/disk/spool/done/\(name).status.json")
            return data.flatMap { StatusRecord.decode(Array($0)) }?.downloads.first?.file
        }
        #expect(status("one.bin") == root + "/dl-link/one.bin")
        #expect(status("two.bin") == root + "/links/media/two.bin")
    }
}
