@testable import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 24, case 5: a destination writer plants a `.part` of its own bytes and a resume record
/// naming the owner job, its claim inode, the part's inode and the server's ETag. Without the
/// spool's key it cannot seal the record, so the agent neither resumes nor publishes the splice.
@Suite("A forged resume record, end to end")
struct UntrustedDestinationTests {
    @Test("a planted .part with a forged record is fetched from zero, never resumed: the file is the server's")
    func forgedRecordNotResumed() throws {
        let body = TestHTTPServer.randomBytes(3_000_000, seed: 24_500)
        let server = try TestHTTPServer()
        server.serve("/x.bin", body: body)
        let fixture = try SpoolFixture()
        let job = try fixture.drop("x.url", server.url("/x.bin") + "\n")
        let claim = try #require(try FileManager.default.attributesOfItem(atPath: job)[.systemFileNumber] as? Int)

        // The attacker's part: 1 MiB of its own bytes.
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        let poison = [UInt8](repeating: 0x58, count: 1 << 20)
        let partPath = fixture.destination + "/.x.bin.part"
        try Data(poison).write(to: URL(fileURLWithPath: partPath))
        let partInode = try #require(try FileManager.default.attributesOfItem(atPath: partPath)[.systemFileNumber] as? Int)
        var forged = ResumeRecord(owner: "x.url", claim: UInt64(claim), part: UInt64(partInode))
        forged.describe(url: server.url("/x.bin"), mirror: 0, etag: "\"v1\"", lastModified: nil, size: Int64(body.count))
        forged.bytes = Int64(poison.count)
        forged.boot = BootID.current
        // Sealed with a key the attacker made up (the real one is 0600, the agent user's).
        let image = ResumeRecordFile.image(forged, key: try RecordKey.random())
        try Data(image).write(to: URL(fileURLWithPath: fixture.destination + "/.x.bin.part.json"))
        let recordPath = fixture.destination + "/.x.bin.part.json"

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        let requests = server.requests(to: "/x.bin")
        #expect(requests.count == 1 && requests.first?.header("Range") == nil, "\(requests)")
        let status = try fixture.status("done", "x.url")
        #expect(status.downloads.first?.resumedFrom == 0)
        #expect(status.downloads.first?.sha256 == TestHTTPServer.sha256Hex(body))
        #expect(fixture.downloaded("x.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(!FileManager.default.fileExists(atPath: recordPath) && !FileManager.default.fileExists(atPath: partPath))
    }

    @Test("an unsealed record of the old plain-JSON form is not resumed either")
    func plainRecordNotResumed() throws {
        let body = TestHTTPServer.randomBytes(2_000_000, seed: 24_501)
        let server = try TestHTTPServer()
        server.serve("/y.bin", body: body)
        let fixture = try SpoolFixture()
        let job = try fixture.drop("y.url", server.url("/y.bin") + "\n")
        let claim = try #require(try FileManager.default.attributesOfItem(atPath: job)[.systemFileNumber] as? Int)
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        let partPath = fixture.destination + "/.y.bin.part"
        try Data([UInt8](repeating: 0x59, count: 500_000)).write(to: URL(fileURLWithPath: partPath))
        let partInode = try #require(try FileManager.default.attributesOfItem(atPath: partPath)[.systemFileNumber] as? Int)
        var forged = ResumeRecord(owner: "y.url", claim: UInt64(claim), part: UInt64(partInode))
        forged.describe(url: server.url("/y.bin"), mirror: 0, etag: "\"v1\"", lastModified: nil, size: Int64(body.count))
        forged.bytes = 500_000
        try Data(forged.encoded()).write(to: URL(fileURLWithPath: fixture.destination + "/.y.bin.part.json"))

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")
        #expect(server.requests(to: "/y.bin").first?.header("Range") == nil)
        #expect(fixture.downloaded("y.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
    }

    @Test("on_conflict: overwrite with a planted record naming an owner that does not exist: not waited for, the job is done")
    func plantedOwnerNotWaitedFor() throws {
        let body = TestHTTPServer.randomBytes(300_000, seed: 24_502)
        let server = try TestHTTPServer()
        server.serve("/z.bin", body: body)
        let fixture = try SpoolFixture(extraConfig: "on_conflict: overwrite\n")
        try fixture.drop("z.url", server.url("/z.bin") + "\n")
        try FileManager.default.createDirectory(atPath: fixture.destination, withIntermediateDirectories: true)
        let partPath = fixture.destination + "/.z.bin.part"
        try Data([UInt8](repeating: 0x5A, count: 1_000)).write(to: URL(fileURLWithPath: partPath))
        let partInode = try #require(try FileManager.default.attributesOfItem(atPath: partPath)[.systemFileNumber] as? Int)
        // An owner no spool has ever seen, in the record's own format (plain, as c8799ba wrote it).
        let ghost = ResumeRecord(owner: "ghost.url", claim: 999_999_999, part: UInt64(partInode))
        try Data(ghost.encoded()).write(to: URL(fileURLWithPath: fixture.destination + "/.z.bin.part.json"))

        #expect(try fixture.runOnce(timeout: 30) == 0, "\(fixture.log)")
        #expect(fixture.downloaded("z.bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
        #expect(try fixture.status("done", "z.url").downloads.first?.file?.hasSuffix("/z.bin") == true)
    }
}
