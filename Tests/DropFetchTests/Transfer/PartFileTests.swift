@testable import DropFetch
import Foundation
import Glibc
import Testing

/// A `.part`'s resume record rewritten at a checkpoint: the new record replaces the old one, and
/// the old one can be handed over still open, so that freeing it happens where it is closed.
@Suite("Resume record rewrites")
struct PartFileTests {
    private func makePart() throws -> (PartFile, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("part-\(UUID().uuidString)").path
        let folder = try DirectoryHandle.openRoot(path, create: true)
        guard case .ours(let part) = try PartFile.reserve("a.bin", in: folder, for: PartOwner(job: "a.url", claim: 1),
                                                          mode: 0o644, durable: false) else {
            throw SystemError(code: EEXIST, operation: "reserve")
        }
        return (part, path)
    }

    @Test("the replaced record is handed over open and unlinked; the new one counts the checkpoint's bytes")
    func replacedRecordHandedOver() throws {
        let (part, path) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = try #require(try part.folder.status(part.recordName)).st_ino
        var handed: [FileDescriptor] = []
        part.releaseReplacedRecord = { handed.append($0) }
        try part.file.write(Array(repeating: 7, count: 10))
        part.size = 10
        try part.checkpoint()

        #expect(handed.count == 1)
        var info = stat()
        #expect(fstat(try #require(handed.first).rawValue, &info) == 0)
        #expect(info.st_ino == before && info.st_nlink == 0, "the old record, no longer named")
        #expect(try part.folder.status(part.recordName)?.st_ino != before)
        #expect(PartFile.readRecord(part.recordName, in: part.folder)?.bytes == 10)
        #expect(DescriptorRelease(handed.removeFirst()).perform() == nil)
    }

    @Test("without a taker the replaced record is freed at once, and the record is still rewritten")
    func noTaker() throws {
        let (part, path) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try part.file.write(Array(repeating: 7, count: 4))
        part.size = 4
        try part.checkpoint()
        #expect(PartFile.readRecord(part.recordName, in: part.folder)?.bytes == 4)
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        #expect(names == [".a.bin.part", ".a.bin.part.json"], "no temp left: \(names)")
    }
}
