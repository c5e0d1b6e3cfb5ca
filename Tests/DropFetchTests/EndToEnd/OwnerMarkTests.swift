@testable import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 23: a new `.part` names its owner in its `user.dropfetch.owner` attribute and gets a
/// resume record only when one is needed; what reads the owner of a part or a published file
/// reads the mark where there is no record.
@Suite("Owner marks, end to end")
struct OwnerMarkTests {
    private static func key() throws -> RecordKey {
        try RecordKey.loadOrCreate(inFolder: try #require(RecordKey.folder()))
    }

    private static func inode(_ path: String) throws -> UInt64 {
        UInt64(try #require(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int))
    }

    @Test("a small file is published with its owner mark and no record file is ever left beside it")
    func publishedFileCarriesMark() throws {
        let body = TestHTTPServer.randomBytes(16_384, seed: 23_300)
        let server = try TestHTTPServer()
        server.serve("/s.bin", body: body)
        let fixture = try SpoolFixture()
        let job = try fixture.drop("s.url", server.url("/s.bin") + "\n")
        let claim = try Self.inode(job)
        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(fixture.destinationNames() == ["s.bin"])
        let folder = try DirectoryHandle.openRoot(fixture.destination, create: false)
        let mark = try #require(PartFile.readMark("s.bin", in: folder, key: try Self.key()))
        #expect(mark.isOwned(by: PartOwner(job: "s.url", claim: claim)))
        #expect(mark.part == (try Self.inode(fixture.destination + "/s.bin")))
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
}
