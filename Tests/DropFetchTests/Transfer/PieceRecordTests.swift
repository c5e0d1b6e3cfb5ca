@testable import DropFetch
import Testing

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
