@testable import DropFetch
import Testing
import Foundation

/// Issue 26: the resume record of a download written by several connections holds its piece map,
/// and trusts pieces by the boot rule: on the same boot every written piece, else only the fsynced ones.
@Suite("Piece records")
struct PieceRecordTests {
    private func record(boot: String?) -> ResumeRecord {
        var record = ResumeRecord(owner: "x.url", claim: 1, part: 2)
        record.describe(url: "http://h/x", mirror: 0, etag: "\"v1\"", lastModified: nil, size: 1000)
        record.pieces = [.init(0, 100), .init(300, 500), .init(800, 1000)]
        record.syncedPieces = [.init(0, 50), .init(300, 400)]
        record.boot = boot
        return record
    }

    @Test("same boot: every written piece; another boot or none: only the fsynced ones")
    func bootRule() {
        let written = record(boot: "boot-a")
        #expect(written.trustedPieces(of: 1000, bootNow: "boot-a")?.done == [.init(0, 100), .init(300, 500), .init(800, 1000)])
        #expect(written.trustedPieces(of: 1000, bootNow: "boot-b")?.done == [.init(0, 50), .init(300, 400)])
        #expect(record(boot: nil).trustedPieces(of: 1000, bootNow: nil)?.done == [.init(0, 50), .init(300, 400)])
    }

    @Test("a piece beyond the file's size on disk is not trusted; synced pieces never exceed written ones")
    func clippedToFile() {
        var record = record(boot: "boot-a")
        #expect(record.trustedPieces(of: 450, bootNow: "boot-a")?.done == [.init(0, 100), .init(300, 450)])
        record.syncedPieces = [.init(0, 200)]
        #expect(record.trustedPieces(of: 1000, bootNow: "boot-b")?.done == [.init(0, 100)])
    }

    @Test("a one-connection resume of a piece record takes only the prefix before the first hole")
    func prefixOnly() {
        #expect(record(boot: "boot-a").trustedBytes(of: 1000, bootNow: "boot-a") == 100)
        #expect(record(boot: "boot-a").trustedBytes(of: 1000, bootNow: "boot-b") == 50)
        var record = record(boot: "boot-a")
        record.describe(url: "http://h/x", mirror: 0, etag: "\"v1\"", lastModified: nil, size: 1000)
        #expect(record.pieces == nil && record.trustedBytes(of: 1000, bootNow: "boot-a") == 1000)
    }

    @Test("the piece map survives the record's JSON; a record without one reads as before")
    func roundTrip() throws {
        let original = record(boot: "boot-a")
        let text = String(decoding: original.encoded(), as: UTF8.self)
        #expect(text.contains(#""pieces":[[0,100],[300,500],[800,1000]]"#), "\(text)")
        #expect(ResumeRecord.decode(original.encoded()) == original)
        var plain = original
        plain.pieces = nil
        plain.syncedPieces = nil
        #expect(!String(decoding: plain.encoded(), as: UTF8.self).contains("pieces"))
        #expect(ResumeRecord.decode(Array(text.replacingOccurrences(of: "[300,500]", with: "[500,300]").utf8)) == nil)
    }
}

/// The piece map on disk: a `.part` reopened after a kill resumes the written pieces on the same
/// boot, the synced ones on another, and a one-connection resume only the prefix before a hole.
@Suite("Piece records on disk")
struct PieceRecordFileTests {
    private static let key = RecordKey(bytes: Array(repeating: 9, count: 32))
    private static let owner = PartOwner(job: "a.url", claim: 1)

    private func reserve(_ folder: DirectoryHandle) throws -> PartFile {
        guard case .ours(let part) = try PartFile.reserve("a.bin", in: folder, for: Self.owner, mode: 0o644,
                                                          durable: true, key: Self.key) else {
            throw SystemError(code: EEXIST, operation: "reserve")
        }
        return part
    }

    @Test("recorded pieces are read back by the next owner; synced ones only after a checkpoint")
    func reopened() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pieces-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try DirectoryHandle.openRoot(path, create: true)
        do {
            let part = try reserve(folder)
            part.describe(url: "http://h/a.bin", mirror: 0, etag: "\"v1\"", lastModified: nil, total: 4000)
            try part.file.write(Array(repeating: 1, count: 1000), at: 0)
            try part.file.write(Array(repeating: 2, count: 1000), at: 2000)
            var map = PieceMap(total: 4000, done: [.init(0, 1000), .init(2000, 3000)])
            try part.recordPieces(map)
            var record = try #require(PartFile.readRecord(part.recordName, in: folder, key: Self.key))
            #expect(record.trustedPieces(of: 3000, bootNow: BootID.current)?.done == map.done)
            #expect(record.trustedPieces(of: 3000, bootNow: "another boot")?.done == [])

            try part.checkpoint(pieces: map)
            map.add(.init(3000, 3500))
            try part.file.write(Array(repeating: 3, count: 500), at: 3000)
            try part.recordPieces(map)
            record = try #require(PartFile.readRecord(part.recordName, in: folder, key: Self.key))
            #expect(record.trustedPieces(of: 3500, bootNow: "another boot")?.done == [.init(0, 1000), .init(2000, 3000)])
            #expect(record.trustedPieces(of: 3500, bootNow: BootID.current)?.done == [.init(0, 1000), .init(2000, 3500)])

        }
        let reopened = try reserve(folder)
        #expect(try reopened.resumableBytes() == 1000, "a one-connection resume stops at the first hole")
    }

    @Test("a one-connection resume after a split whose other connections wrote up to the resume point appends there, not where the first connection's writes stopped")
    func resumeAfterPiecesWrittenBehindTheAppends() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pieces-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try DirectoryHandle.openRoot(path, create: true)
        let part = try reserve(folder)
        part.describe(url: "http://h/a.bin", mirror: 0, etag: "\"v1\"", lastModified: nil, total: 4000)
        // The first connection appends its 1,000 bytes as a transfer does; a second one writes
        // the next piece with pwrite(2), up to the end of the file.
        try part.file.write(Array(repeating: 1, count: 1000))
        part.size += 1000
        try part.file.write(Array(repeating: 2, count: 2000), at: 1000)
        try part.recordPieces(PieceMap(total: 4000, done: [.init(0, 3000)]))

        #expect(try part.resumableBytes() == 3000)
        try part.file.write(Array(repeating: 3, count: 1000))
        part.size += 1000

        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: part.path)))
        #expect(bytes.count == 4000)
        #expect(bytes[0..<1000].allSatisfy { $0 == 1 })
        #expect(bytes[1000..<3000].allSatisfy { $0 == 2 }, "the second connection's piece is not overwritten")
        #expect(bytes[3000..<4000].allSatisfy { $0 == 3 })
    }
}
