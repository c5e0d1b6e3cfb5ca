@testable import DropFetch
import Foundation
import Glibc
import Testing

/// A `.part`'s resume record: sealed with the spool's key, updated in place, stamped with the boot.
@Suite("Resume records")
struct PartFileTests {
    private static let key = RecordKey(bytes: Array(repeating: 9, count: 32))
    private static let owner = PartOwner(job: "a.url", claim: 1)

    private func makeFolder() throws -> (DirectoryHandle, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("part-\(UUID().uuidString)").path
        return (try DirectoryHandle.openRoot(path, create: true), path)
    }

    private func reserve(in folder: DirectoryHandle, key: RecordKey = PartFileTests.key) throws -> PartFile {
        guard case .ours(let part) = try PartFile.reserve("a.bin", in: folder, for: Self.owner, mode: 0o644,
                                                          durable: false, key: key) else {
            throw SystemError(code: EEXIST, operation: "reserve")
        }
        return part
    }

    /// A part holding `count` bytes whose record names an ETag and counts `durable` of them as synced.
    private func partWithData(in folder: DirectoryHandle, count: Int, durable: Int64) throws -> PartFile {
        let part = try reserve(in: folder)
        try part.file.write(Array(repeating: 7, count: count))
        part.size = Int64(count)
        part.describe(url: "http://h/a.bin", mirror: 0, etag: "\"v1\"", lastModified: nil, total: 1000)
        try part.recordDurable(durable, cuts: part.cuts)
        return part
    }

    @Test("a checkpoint rewrites the record in place: same inode, same size and blocks, no temp file")
    func updatedInPlace() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let part = try reserve(in: folder)
        let before = try #require(try folder.status(part.recordName))
        for round in 1...5 {
            try part.file.write(Array(repeating: 7, count: 10))
            part.size = Int64(10 * round)
            try part.checkpoint()
            let after = try #require(try folder.status(part.recordName))
            #expect(after.st_ino == before.st_ino && after.st_size == before.st_size && after.st_blocks == before.st_blocks)
            #expect(PartFile.readRecord(part.recordName, in: folder, key: Self.key)?.bytes == Int64(10 * round))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        #expect(names == [".a.bin.part", ".a.bin.part.json"], "no temp left: \(names)")
    }

    @Test("on the boot that wrote it, the whole .part resumes, beyond what was synced")
    func sameBootTrustsWholePart() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try partWithData(in: folder, count: 300, durable: 100)
        let reopened = try reserve(in: folder)
        #expect(try reopened.resumableBytes() == 300)
    }

    @Test("a record written on another boot (or host) resumes only the synced prefix")
    func otherBootTrustsSyncedPrefix() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recordName = try partWithData(in: folder, count: 300, durable: 100).recordName
        var record = try #require(PartFile.readRecord(recordName, in: folder, key: Self.key))
        record.boot = "00000000-0000-0000-0000-000000000000"
        try Data(ResumeRecordFile.image(record, key: Self.key)).write(to: URL(fileURLWithPath: path + "/" + recordName))
        let reopened = try reserve(in: folder)
        #expect(try reopened.resumableBytes() == 100)
        #expect(try folder.status(".a.bin.part")?.st_size == 100, "the unsynced tail is cut off")
    }

    @Test("a record that the spool's key did not seal is no record: the .part is not resumed nor kept")
    func forgedRecordIgnored() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        // What a destination writer can do: a part of its own and a record naming the owner, the
        // part's inode and a validator, in the right format but sealed with a key of its own.
        let planted = try folder.open(".a.bin.part", flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        try planted.write(Array(repeating: 0x41, count: 4096))
        var forged = ResumeRecord(owner: Self.owner.job, claim: Self.owner.claim, part: UInt64(try planted.status().st_ino))
        forged.describe(url: "http://h/a.bin", mirror: 0, etag: "\"v1\"", lastModified: nil, size: 8192)
        forged.bytes = 4096
        forged.boot = BootID.current
        let forger = RecordKey(bytes: Array(repeating: 3, count: 32))
        try Data(ResumeRecordFile.image(forged, key: forger)).write(to: URL(fileURLWithPath: path + "/.a.bin.part.json"))
        #expect(PartFile.readRecord(".a.bin.part.json", in: folder, key: Self.key) == nil)

        let part = try reserve(in: folder)
        #expect(try part.resumableBytes() == 0)
        #expect(part.record.validator == nil)
        #expect(UInt64(try part.file.status().st_ino) != forged.part, "the planted file was replaced, not written through")
    }

    @Test("a record altered after it was sealed (or torn by a crash) is no record")
    func alteredRecord() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recordName = try partWithData(in: folder, count: 300, durable: 100).recordName
        let url = URL(fileURLWithPath: path + "/" + recordName)
        let original = [UInt8](try Data(contentsOf: url))
        let text = String(decoding: original, as: UTF8.self)
        #expect(text.contains(#""bytes":100"#), "the record is JSON with its fields at the top: \(text)")
        #expect(PartFile.readRecord(recordName, in: folder, key: Self.key)?.bytes == 100)
        try Data(text.replacingOccurrences(of: #""bytes":100"#, with: #""bytes":300"#).utf8).write(to: url)
        #expect(PartFile.readRecord(recordName, in: folder, key: Self.key) == nil)
        try Data(original.prefix(60)).write(to: url)
        #expect(PartFile.readRecord(recordName, in: folder, key: Self.key) == nil)
    }

    @Test("the boot rule: same boot → the whole file (up to the announced size); else the synced prefix")
    func trustedBytes() {
        var record = ResumeRecord(owner: "x.url", claim: 1, part: 2)
        record.bytes = 40
        record.boot = "boot-a"
        #expect(record.trustedBytes(of: 90, bootNow: "boot-a") == 90)
        #expect(record.trustedBytes(of: 90, bootNow: "boot-b") == 40)
        #expect(record.trustedBytes(of: 90, bootNow: nil) == 40)
        record.size = 60
        #expect(record.trustedBytes(of: 90, bootNow: "boot-a") == 60)
        record.boot = nil
        #expect(record.trustedBytes(of: 90, bootNow: nil) == 40)
    }

    @Test("a FIFO planted as a record is not opened in a way that blocks")
    func fifoRecord() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(mkfifo(path + "/.a.bin.part.json", 0o644) == 0)
        #expect(PartFile.readRecord(".a.bin.part.json", in: folder, key: Self.key) == nil)
    }

    @Test("the spool key is created once, mode 0600, and read back; a key open to others is replaced")
    func spoolKey() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try RecordKey.loadOrCreate(in: folder)
        let info = try #require(try folder.status(RecordKey.fileName))
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(try RecordKey.loadOrCreate(in: folder) == first)
        #expect(try RecordKey.read(in: folder) == first)
        #expect(chmod(path + "/" + RecordKey.fileName, 0o644) == 0)
        #expect(try RecordKey.read(in: folder) == nil)
        let replaced = try RecordKey.loadOrCreate(in: folder)
        #expect(replaced != first)
        #expect(try folder.status(RecordKey.fileName).map { $0.st_mode & 0o777 } == 0o600)
    }

    @Test("the key's folder: STATE_DIRECTORY, then XDG_STATE_HOME, then HOME, then the password database's home")
    func keyFolder() {
        func folder(_ variables: [String: String]) -> String? { RecordKey.folder { variables[$0] } }
        #expect(folder(["STATE_DIRECTORY": "/var/lib/dropfetch:/var/lib/other", "HOME": "/h"]) == "/var/lib/dropfetch")
        #expect(folder(["XDG_STATE_HOME": "/x", "HOME": "/h"]) == "/x/dropfetch")
        #expect(folder(["HOME": "/h"]) == "/h/.local/state/dropfetch")
        #expect(folder(["HOME": "relative", "XDG_STATE_HOME": "also-relative"]) == folder([:]))
        let home = getpwuid(geteuid()).flatMap { $0.pointee.pw_dir.map { String(cString: $0) } }
        #expect(folder([:]) == home.map { $0 + "/.local/state/dropfetch" })
    }
}
