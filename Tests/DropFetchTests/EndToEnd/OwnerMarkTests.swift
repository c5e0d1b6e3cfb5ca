@testable import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 23: a new `.part` names its owner in its `user.dropfetch.owner` attribute and gets a
/// resume record only when one is needed; what reads the owner of a part or a published file
/// reads the mark where there is no record, and the mark goes when the job is filed, as a record does.
@Suite("Owner marks, end to end")
struct OwnerMarkTests {
    private static func key() throws -> RecordKey {
        try RecordKey.loadOrCreate(inFolder: try #require(RecordKey.folder()))
    }

    private static func inode(_ path: String) throws -> UInt64 {
        UInt64(try #require(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int))
    }

    @Test("a small job creates no record file, and once it is filed its file keeps no owner mark either")
    func filedFileUnmarked() throws {
        let body = TestHTTPServer.randomBytes(16_384, seed: 23_300)
        let server = try TestHTTPServer()
        server.serve("/s.bin", body: body)
        let fixture = try SpoolFixture()
        try fixture.drop("s.url", server.url("/s.bin") + "\n")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.destinationNames() == ["s.bin"])
        #expect(fixture.downloaded("s.bin") == body)
        let file = try FileDescriptor.open(fixture.destination + "/s.bin", flags: O_RDONLY)
        #expect(try file.attribute(OwnerMark.attribute, limit: OwnerMark.maxLength) == nil)
    }

    @Test("a job of three downloads, one failing for good: the two files it published keep no owner mark once it is filed")
    func multiDownloadMarksRemoved() throws {
        let server = try TestHTTPServer()
        let bodies = [TestHTTPServer.randomBytes(8_000, seed: 23_320), TestHTTPServer.randomBytes(30_000, seed: 23_321)]
        server.serve("/m1.bin", body: bodies[0])
        server.serve("/m2.bin", body: bodies[1])
        let fixture = try SpoolFixture()
        try fixture.drop("multi.url", [server.url("/m1.bin"), server.url("/m2.bin"), server.url("/missing.bin")].joined(separator: "\n") + "\n")
        #expect(try fixture.runOnce() == 1, "\(fixture.log)")
        #expect(fixture.jobs(in: "failed") == ["multi.url"])
        #expect(fixture.destinationNames() == ["m1.bin", "m2.bin"])
        for name in ["m1.bin", "m2.bin"] {
            let file = try FileDescriptor.open(fixture.destination + "/" + name, flags: O_RDONLY)
            #expect(try file.attribute(OwnerMark.attribute, limit: OwnerMark.maxLength) == nil, "\(name)")
        }
    }

    @Test("cancel of a held job removes its .part found by its mark alone; another job's marked .part stays")
    func cancelRemovesMarkedPart() throws {
        let fixture = try SpoolFixture()
        let dropped = try fixture.drop("m.url", "http://127.0.0.1:9/m.bin\n")
        let held = fixture.spool + "/hold/m.url"
        try FileManager.default.createDirectory(atPath: fixture.spool + "/hold", withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: dropped, toPath: held)
        let key = try Self.key()
        let folder = try DirectoryHandle.openRoot(fixture.destination, create: true)
        for (name, owner) in [("m.bin", PartOwner(job: "m.url", claim: try Self.inode(held))),
                              ("m.1.bin", PartOwner(job: "other.url", claim: 1))] {
            guard case .ours(let part) = try PartFile.reserve(name, in: folder, for: owner, mode: 0o644, durable: false, key: key) else {
                Issue.record("\(name) not reserved")
                return
            }
            try part.file.write(Array(repeating: 1, count: 1000))
            #expect(!part.hasRecordFile)
        }
        #expect(fixture.destinationNames() == [".m.1.bin.part", ".m.bin.part"])

        #expect(try fixture.runCLI(["cancel", "m"]) == 0)
        #expect(fixture.jobs(in: "failed") == ["m.url"])
        #expect(fixture.destinationNames() == [".m.1.bin.part"], "its own part removed, the other job's kept")
    }
    @Test("a new job file that reuses a filed job's inode under its name is a new job: the old file is not taken for its own")
    func reusedClaimIsANewJob() throws {
        let first = TestHTTPServer.randomBytes(16_384, seed: 23_310)
        let second = TestHTTPServer.randomBytes(16_384, seed: 23_311)
        let server = try TestHTTPServer()
        server.serve("/r.bin", body: first)
        let fixture = try SpoolFixture()
        let claim = try Self.inode(try fixture.drop("r.url", server.url("/r.bin") + "\n"))
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.downloaded("r.bin") == first)
        // Cleaned away, as a cron job might; the next r.url gets the freed inode (ext4 hands it out again).
        for name in ["r.url", "r.status.json"] { try FileManager.default.removeItem(atPath: fixture.spool + "/done/" + name) }
        var spares: [String] = []
        defer { for spare in spares { try? FileManager.default.removeItem(atPath: spare) } }
        var reused: String?
        for attempt in 0..<64 {
            let path = fixture.spool + "/inbox/.r.\(attempt).tmp"
            try Data((server.url("/r.bin") + "\n").utf8).write(to: URL(fileURLWithPath: path))
            if try Self.inode(path) == claim {
                reused = path
                break
            }
            spares.append(path)
        }
        guard let reused else {
            print("the file system did not hand out inode \(claim) again: nothing to check")
            return
        }
        server.serve("/r.bin", body: second)
        try FileManager.default.moveItem(atPath: reused, toPath: fixture.spool + "/inbox/r.url")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -10)],
                                              ofItemAtPath: fixture.spool + "/inbox/r.url")
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let status = try fixture.status("done", "r.url")
        #expect(status.downloads.first?.sha256 == TestHTTPServer.sha256Hex(second), "the new job took the old file: \(fixture.log)")
        #expect(server.requests(to: "/r.bin").count == 2)
    }
}
