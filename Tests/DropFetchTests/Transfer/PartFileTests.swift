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
        try part.checkpoint()
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
    // MARK: - The owner marked on the part (issue 23: no record file until one is needed)

    private static let other = PartOwner(job: "b.url", claim: 2)

    private func reserve(_ owner: PartOwner, in folder: DirectoryHandle) throws -> PartFile.Reservation {
        try PartFile.reserve("a.bin", in: folder, for: owner, mode: 0o644, durable: false, key: Self.key)
    }

    private func names(in path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    private func mark(of path: String) throws -> [UInt8]? {
        try FileDescriptor.open(path, flags: O_RDONLY).attribute(OwnerMark.attribute, limit: OwnerMark.maxLength)
    }

    /// A part of `owner` with `count` bytes, reserved and then given up as a crash would: its
    /// descriptor closed (the lock freed), nothing else done. Returns its inode.
    private func crashedPart(of owner: PartOwner, in folder: DirectoryHandle, count: Int = 0) throws -> UInt64 {
        guard case .ours(let part) = try reserve(owner, in: folder) else { throw SystemError(code: EEXIST, operation: "reserve") }
        try part.file.write(Array(repeating: 7, count: count))
        return UInt64(try part.file.status().st_ino)
    }

    @Test("an owner mark's bytes are those of docs/spool.md: version, claim, the seal's first 16 bytes, the job; marks written before still verify")
    func ownerMarkLayout() {
        let claim: UInt64 = 0x0102_0304_0506_0708
        let inode: UInt64 = 0x1122_3344_5566_7788
        func littleEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64($0 * 8)) } }
        let job = Array("a.url".utf8)
        let message = Array("dropfetch owner mark".utf8) + [0, 1] + littleEndian(claim) + littleEndian(inode) + job
        let expected = [1] + littleEndian(claim) + Array(Self.key.seal(message).prefix(16)) + job
        let value = OwnerMark.value(for: PartOwner(job: "a.url", claim: claim), part: inode, key: Self.key)
        #expect(value == expected)
        #expect(OwnerMark.owner(in: expected, part: inode, key: Self.key) == PartOwner(job: "a.url", claim: claim))
    }

    @Test("a new .part carries its owner, sealed, as user.dropfetch.owner, and no record file is written")
    func newPartIsMarked() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let part = try reserve(in: folder)
        #expect(try names(in: path) == [".a.bin.part"], "no record file, no temp")
        #expect(!part.hasRecordFile)
        let value = try #require(try mark(of: path + "/.a.bin.part"))
        let inode = UInt64(try part.file.status().st_ino)
        #expect(OwnerMark.owner(in: value, part: inode, key: Self.key) == Self.owner)
        #expect(OwnerMark.owner(in: value, part: inode + 1, key: Self.key) == nil, "the seal covers the part's inode")
        #expect(value.count <= 56, "small enough to stay inside an ext4 inode: \(value.count) bytes")
        #expect(PartFile.readMark(".a.bin.part", in: folder, key: Self.key) == ResumeRecord(owner: "a.url", claim: 1, part: inode))
        #expect(PartFile.readOwner(ofPart: ".a.bin.part", in: folder, key: Self.key)?.owner == "a.url")
    }

    @Test("the first checkpoint creates the record file, which a restart then resumes from")
    func checkpointCreatesRecord() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let inode: UInt64
        do {
            let part = try reserve(in: folder)
            try part.file.write(Array(repeating: 7, count: 100))
            part.size = 100
            part.describe(url: "http://h/a.bin", mirror: 0, etag: "\"v1\"", lastModified: nil, total: 1000)
            try part.checkpoint()
            #expect(part.hasRecordFile)
            #expect(try names(in: path) == [".a.bin.part", ".a.bin.part.json"])
            let record = try #require(PartFile.readRecord(part.recordName, in: folder, key: Self.key))
            #expect(record.bytes == 100 && record.etag == "\"v1\"" && record.isOwned(by: Self.owner))
            inode = UInt64(try part.file.status().st_ino)
        }
        // After a kill, the record (with its validator) resumes the data, not the bare mark.
        let reopened = try reserve(in: folder)
        #expect(UInt64(try reopened.file.status().st_ino) == inode)
        #expect(try reopened.resumableBytes() == 100)
    }

    @Test("a failure's saveRecord and recordPieces create the record file too")
    func savedRecordCreatesFile() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let saved = try reserve(in: folder)
        try saved.saveRecord()
        #expect(saved.hasRecordFile && PartFile.readRecord(saved.recordName, in: folder, key: Self.key) != nil)
        saved.discard()
        #expect(try names(in: path).isEmpty)
        let pieces = try reserve(in: folder)
        try pieces.recordPieces(PieceMap(total: 100, done: [PieceMap.Range(0, 10)]))
        #expect(PartFile.readRecord(pieces.recordName, in: folder, key: Self.key)?.pieces == [PieceMap.Range(0, 10)])
    }

    @Test("a discarded part takes with it the record temp a kill left mid-write; another part's temp stays")
    func discardClearsRecordTemp() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let part = try reserve(in: folder)
        let temp = PartFile.recordTempName(of: part.recordName)
        let other = PartFile.recordTempName(of: ResumeRecord.name(forPart: "b.bin.part"))
        for name in [temp, other] { #expect(FileManager.default.createFile(atPath: path + "/" + name, contents: Data([1]))) }
        part.discard()
        #expect(try names(in: path) == [other])
    }

    @Test("after a crash the same owner takes its marked .part again: the same file, no resumable bytes, still no record")
    func crashedPartReopenedFromMark() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let inode = try crashedPart(of: Self.owner, in: folder, count: 300)
        guard case .ours(let part) = try reserve(Self.owner, in: folder) else {
            Issue.record("the owner did not get its own part back")
            return
        }
        #expect(UInt64(try part.file.status().st_ino) == inode && part.size == 300, "reopened, not replaced")
        #expect(part.record.isOwned(by: Self.owner) && part.record.validator == nil && part.record.bytes == 0)
        #expect(try part.resumableBytes() == 0, "nothing proves the bytes: fetched again from zero")
        #expect(try names(in: path) == [".a.bin.part"])
    }

    @Test("another job reserving the name of a marked .part gets taken, from the mark alone: nothing is removed")
    func markedPartTakenByOwner() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            // Held (locked): the owner is named, not "another process".
            guard case .ours(let held) = try reserve(Self.owner, in: folder) else { throw SystemError(code: EEXIST, operation: "reserve") }
            guard case .taken(let busy) = try reserve(Self.other, in: folder) else {
                Issue.record("another job took a held, marked part")
                return
            }
            #expect(busy == "a.url")
            held.discard()
        }
        let inode = try crashedPart(of: Self.owner, in: folder, count: 50)
        // Crashed: no lock holder and no record file, only the mark.
        guard case .taken(let owner) = try reserve(Self.other, in: folder) else {
            Issue.record("another job took a crashed owner's marked part")
            return
        }
        #expect(owner == "a.url")
        #expect(try folder.status(".a.bin.part").map { UInt64($0.st_ino) } == inode, "the owner's part is left alone")
        #expect(try folder.status(".a.bin.part")?.st_size == 50)
        #expect(try names(in: path) == [".a.bin.part"])
    }

    @Test("a mark sealed with another key, or copied from another file, is nobody's: the .part is replaced")
    func forgedMarkIgnored() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let forger = RecordKey(bytes: Array(repeating: 3, count: 32))
        for owner in [Self.owner, Self.other] {
            let planted = try folder.open(".a.bin.part", flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
            try planted.write(Array(repeating: 0x41, count: 4096))
            let inode = UInt64(try planted.status().st_ino)
            try planted.setAttribute(OwnerMark.attribute, to: OwnerMark.value(for: Self.owner, part: inode, key: forger))
            #expect(PartFile.readMark(".a.bin.part", in: folder, key: Self.key) == nil)
            guard case .ours(let part) = try reserve(owner, in: folder) else {
                Issue.record("\(owner.job): a forged mark kept the name")
                return
            }
            #expect(try part.file.status().st_size == 0, "the planted file (inode \(inode)) was replaced, not written through")
            #expect(try part.resumableBytes() == 0)
            #expect(PartFile.readMark(".a.bin.part", in: folder, key: Self.key)?.isOwned(by: owner) == true)
            part.discard()
        }
        // A genuine mark copied onto a file of its own: the seal covers the inode, so it proves nothing there.
        guard case .ours(let kept) = try reserve(Self.owner, in: folder) else { throw SystemError(code: EEXIST, operation: "reserve") }
        try folder.rename(kept.name, to: "kept.bin")
        let genuine = try #require(try mark(of: path + "/kept.bin"))
        let copy = try folder.open(".a.bin.part", flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        try copy.write(Array(repeating: 0x42, count: 100))
        try copy.setAttribute(OwnerMark.attribute, to: genuine)
        #expect(PartFile.readMark(".a.bin.part", in: folder, key: Self.key) == nil)
        guard case .ours(let part) = try reserve(Self.other, in: folder) else {
            Issue.record("a copied mark kept the name")
            return
        }
        #expect(try part.file.status().st_size == 0, "the file with the copied mark was replaced")
    }

    @Test("a .part whose mark was removed, with no record, is nobody's: replaced, never written through")
    func strippedMarkIsNobodys() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let inode: UInt64
        do {
            guard case .ours(let part) = try reserve(Self.owner, in: folder) else { throw SystemError(code: EEXIST, operation: "reserve") }
            try part.file.write(Array(repeating: 7, count: 64))
            try part.file.removeAttribute(OwnerMark.attribute)
            try part.file.removeAttribute(OwnerMark.attribute)
            inode = UInt64(try part.file.status().st_ino)
        }
        #expect(try mark(of: path + "/.a.bin.part") == nil)
        guard case .ours(let part) = try reserve(Self.other, in: folder) else {
            Issue.record("an unmarked, unrecorded part kept the name")
            return
        }
        // Removed and created again (ext4 may hand out the same inode number): its bytes are gone.
        #expect(try part.size == 0 && part.file.status().st_size == 0, "inode \(inode) was written through")
        #expect(PartFile.readMark(".a.bin.part", in: folder, key: Self.key)?.isOwned(by: Self.other) == true)
    }

    @Test("where the file system refuses user attributes, the record file is written at once and proves the owner")
    func refusedAttributesFallBack() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        folder.noteUserAttributesRefused()
        let inode = try crashedPart(of: Self.owner, in: folder, count: 10)
        #expect(try names(in: path) == [".a.bin.part", ".a.bin.part.json"])
        #expect(try mark(of: path + "/.a.bin.part") == nil, "not asked for once refused")
        #expect(PartFile.readRecord(".a.bin.part.json", in: folder, key: Self.key)?.isOwned(by: Self.owner) == true)
        guard case .taken(let owner) = try reserve(Self.other, in: folder) else {
            Issue.record("another job took a part its record names")
            return
        }
        #expect(owner == "a.url")
        guard case .ours(let part) = try reserve(Self.owner, in: folder) else {
            Issue.record("the owner did not get its own part back")
            return
        }
        #expect(UInt64(try part.file.status().st_ino) == inode && part.size == 10, "reopened, not replaced")
    }

    @Test("a published file proves its job's by its mark alone (rename keeps it); another job's is not")
    func publishedFileMarked() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let part = try reserve(in: folder)
        try part.file.write(Array(repeating: 7, count: 10))
        try folder.rename(part.name, to: part.finalName)
        let final = try #require(try folder.status("a.bin"))
        #expect(try names(in: path) == ["a.bin"])
        #expect(try OutputNames.isPublished("a.bin", final, in: folder, by: Self.owner, key: Self.key))
        #expect(try !OutputNames.isPublished("a.bin", final, in: folder, by: Self.other, key: Self.key))
        #expect(try !OutputNames.isPublished("a.bin", final, in: folder, by: Self.owner,
                                             key: RecordKey(bytes: Array(repeating: 3, count: 32))))
    }

    @Test("file_mode holds whatever the umask: the part gets exactly the mode asked for")
    func partMode() throws {
        let (folder, path) = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (index, mode) in [UInt32(0o644), 0o600, 0o666, 0o664].enumerated() {
            guard case .ours(let part) = try PartFile.reserve("m\(index).bin", in: folder, for: Self.owner, mode: mode,
                                                              durable: false, key: Self.key) else {
                Issue.record("not reserved")
                continue
            }
            #expect(UInt32(try part.file.status().st_mode) & 0o7777 == mode)
        }
    }
}
