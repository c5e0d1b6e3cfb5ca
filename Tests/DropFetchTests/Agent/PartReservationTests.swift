@testable import DropFetch
import Foundation
import Testing

/// A download's output name taken as the worker does it (`PartReservation`): the folder created,
/// the `.part` and its record on disk, `on_conflict` between two jobs, and what a reservation
/// whose job left leaves behind.
@Suite("Output names taken on the worker")
struct PartReservationTests {
    private func makeRoot() throws -> (DirectoryHandle, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("reserve-\(UUID().uuidString)").path
        return (try DirectoryHandle.openRoot(path, create: true), path)
    }

    private func reservation(_ root: DirectoryHandle, job: String, claim: UInt64, subfolder: String = "",
                             onConflict: Config.ConflictPolicy = .rename, setAside: SetAsidePart? = nil,
                             recorded: String? = nil, distrustsData: Bool = false, siblings: [SetAsidePart] = []) -> PartReservation {
        PartReservation(root: root, subfolder: subfolder, dir: subfolder.isEmpty ? nil : subfolder, name: "a.bin",
                        owner: PartOwner(job: job, claim: claim), onConflict: onConflict, digest: .sha256,
                        mode: 0o644, durable: false, key: RecordKey(bytes: Array(repeating: 9, count: 32)),
                        distrustsData: distrustsData,
                        earlier: setAside.map(PartReservation.EarlierName.setAside) ?? recorded.map { PartReservation.EarlierName.recorded(name: FileSystem.baseName(of: $0)) },
                        siblings: siblings)
    }

    /// Reserves a name for `job` and sets its part aside as a download waiting for a descriptor
    /// does (`Job.setAside`): the part's descriptor is closed when the reservation goes.
    private func reserveAndSetAside(_ root: DirectoryHandle, job: String, claim: UInt64, subfolder: String = "",
                                    setAside earlier: SetAsidePart? = nil) throws -> SetAsidePart {
        SetAsidePart(try reservedPart(reservation(root, job: job, claim: claim, subfolder: subfolder, setAside: earlier)))
    }

    private struct ReservationRefused: Error { let choice: String }

    /// Runs `reservation` as its worker would; the part it took, or ReservationRefused.
    private func reservedPart(_ reservation: PartReservation) throws -> PartFile {
        _ = reservation.perform()
        guard case .reserved(let part) = reservation.choice else { throw ReservationRefused(choice: "\(reservation.choice)") }
        return part
    }

    /// This process's descriptors open on `path` or a file in it (/proc/self/fd).
    private func openDescriptors(to path: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.compactMap { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry),
                  target == path || target.hasPrefix(path + "/") else { return nil }
            return target
        }
    }

    /// Reserves a name for `job`, writes 1,000 bytes into its part with a record that vouches for
    /// them, and returns the part's final path; the part is closed when the reservation goes.
    private func writePartially(_ root: DirectoryHandle, job: String, claim: UInt64) throws -> String {
        try partWithData(root, job: job, claim: claim).finalPath
    }

    /// Reserves a name for `job` and writes 1,000 bytes into its part with a record that vouches
    /// for them; the part, still open (and locked) until the caller drops it.
    private func partWithData(_ root: DirectoryHandle, job: String, claim: UInt64) throws -> PartFile {
        let taken = reservation(root, job: job, claim: claim)
        let part = try reservedPart(taken)
        part.describe(url: "http://h/a.bin", mirror: 0, etag: "\"v1\"", lastModified: nil, total: 4000)
        try part.file.write(Array(repeating: 7, count: 1000))
        part.size += 1000
        try part.checkpoint()
        taken.release(keeping: true)
        return part
    }

    private func inode(_ path: String) throws -> UInt64 {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64)
    }

    @Test("a folder planted as the .part is skipped under rename and fails the download under fail and overwrite, never waited for")
    func plantedFolder() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path + "/.a.bin.part/inner", withIntermediateDirectories: true)
        let renamed = reservation(root, job: "x.url", claim: 1)
        _ = renamed.perform()
        guard case .reserved(let part) = renamed.choice else {
            Issue.record("not reserved: \(renamed.choice)")
            return
        }
        #expect(part.finalName == "a.1.bin")
        for policy in [Config.ConflictPolicy.fail, .overwrite] {
            let refused = reservation(root, job: "y.url", claim: 2, onConflict: policy)
            _ = refused.perform()
            guard case .failed(let failure) = refused.choice else {
                Issue.record("\(policy): \(refused.choice)")
                continue
            }
            #expect(failure.kind == .exists)
        }
        #expect(FileManager.default.fileExists(atPath: path + "/.a.bin.part/inner"), "the planted folder is left alone")
    }

    private func files(in path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    @Test("the .part is created in the subfolder, which is created, its owner marked on it; a second job takes a.1.bin under rename")
    func reservesAndRenames() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = reservation(root, job: "x.url", claim: 1, subfolder: "sub")
        #expect(first.perform() == nil)
        guard case .reserved(let part) = first.choice else {
            Issue.record("not reserved: \(first.choice)")
            return
        }
        #expect(part.path == path + "/sub/.a.bin.part")
        // The owner is sealed on the part; its record file waits for the first checkpoint.
        #expect(try files(in: path + "/sub") == [part.name])
        #expect(PartFile.readMark(part.name, in: part.folder, key: RecordKey(bytes: Array(repeating: 9, count: 32)))?.owner == "x.url")

        let second = reservation(root, job: "y.url", claim: 2, subfolder: "sub")
        _ = second.perform()
        guard case .reserved(let other) = second.choice else {
            Issue.record("not reserved: \(second.choice)")
            return
        }
        #expect(other.finalName == "a.1.bin")
    }

    @Test("under on_conflict: fail a name another job is downloading fails with exists; under overwrite it waits for the owner")
    func conflictPolicies() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let owner = reservation(root, job: "x.url", claim: 1)
        _ = owner.perform()
        guard case .reserved = owner.choice else {
            Issue.record("not reserved: \(owner.choice)")
            return
        }
        let failing = reservation(root, job: "y.url", claim: 2, onConflict: .fail)
        _ = failing.perform()
        guard case .failed(let failure) = failing.choice else {
            Issue.record("expected exists: \(failing.choice)")
            return
        }
        #expect(failure.kind == .exists)
        let waiting = reservation(root, job: "y.url", claim: 2, onConflict: .overwrite)
        _ = waiting.perform()
        guard case .ownerBusy(let name) = waiting.choice else {
            Issue.record("expected the owner to be named: \(waiting.choice)")
            return
        }
        #expect(name == "x.url")
    }

    @Test("a reservation whose job was cancelled meanwhile removes its .part; one whose job was held keeps it, its owner marked on it")
    func releaseOfALeftJob() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let cancelled = reservation(root, job: "x.url", claim: 1)
        _ = cancelled.perform()
        cancelled.release(keeping: false)
        #expect(try files(in: path).isEmpty)

        let held = reservation(root, job: "x.url", claim: 1)
        _ = held.perform()
        held.release(keeping: true)
        guard case .reserved(let part) = held.choice else {
            Issue.record("not reserved: \(held.choice)")
            return
        }
        #expect(try files(in: path) == [part.name])
        #expect(PartFile.readMark(part.name, in: part.folder, key: RecordKey(bytes: Array(repeating: 9, count: 32)))?.owner == "x.url")
    }

    @Test("a part set aside while its download waits for a descriptor keeps the name: another job takes a.1.bin under rename, fails with exists under fail, waits under overwrite; the download's next reservation reopens the same file")
    func setAsidePartKeepsItsName() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let setAside = try reserveAndSetAside(root, job: "x.url", claim: 1)
        let firstInode = try inode(path + "/.a.bin.part")
        #expect(setAside.inode == firstInode)

        let renamed = reservation(root, job: "y.url", claim: 2)
        let other = try reservedPart(renamed)
        #expect(other.finalName == "a.1.bin")
        let failing = reservation(root, job: "z.url", claim: 3, onConflict: .fail)
        _ = failing.perform()
        guard case .failed(let failure) = failing.choice else {
            Issue.record("expected exists: \(failing.choice)")
            return
        }
        #expect(failure.kind == .exists)
        #expect(failure.message.contains("x.url"), "the owner is named: \(failure.message)")
        let waiting = reservation(root, job: "z.url", claim: 3, onConflict: .overwrite)
        _ = waiting.perform()
        guard case .ownerBusy(let owner) = waiting.choice else {
            Issue.record("expected to wait for x.url: \(waiting.choice)")
            return
        }
        #expect(owner == "x.url")

        let again = reservation(root, job: "x.url", claim: 1, setAside: setAside)
        let reopened = try reservedPart(again)
        #expect(reopened.finalName == "a.bin")
        #expect(reopened.record.part == firstInode, "the same file, not a new one")
        #expect(!again.keepsEarlier)
    }

    @Test("a download set aside under a.1.bin takes a.1.bin again when a.bin is free by then; when a.1.bin itself was taken meanwhile it takes the next free name and its set-aside part is removed")
    func setAsidePartUnderARenamedName() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = reservation(root, job: "y.url", claim: 2)
        _ = first.perform()
        let setAside = try reserveAndSetAside(root, job: "x.url", claim: 1)
        #expect(setAside.finalName == "a.1.bin")
        // y is cancelled: a.bin is free.
        first.release(keeping: false)
        let secondSetAside = try reserveAndSetAside(root, job: "x.url", claim: 1, setAside: setAside)
        #expect(secondSetAside.finalName == "a.1.bin", "the name the job chose, not the one freed since")
        #expect(try files(in: path) == [".a.1.bin.part"])

        // A file is written under a.1.bin by someone else while the download waits.
        try Data("not ours".utf8).write(to: URL(fileURLWithPath: path + "/a.1.bin"))
        let moved = reservation(root, job: "x.url", claim: 1, setAside: secondSetAside)
        let part = try reservedPart(moved)
        #expect(part.finalName == "a.bin")
        #expect(try files(in: path) == [".a.bin.part", "a.1.bin"], "the part set aside under a.1.bin is removed")
    }

    @Test("a part set aside with data (a download waiting for its retry) is its download's to reopen with the data: while another descriptor still holds its lock the reservation waits, and then it takes the same file back although the job distrusts adopted data and someone wrote a.bin meanwhile (the publication takes the next free name)")
    func setAsidePartWithDataIsReopened() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var open: PartFile? = try partWithData(root, job: "x.url", claim: 1)
        let setAside = SetAsidePart(try #require(open))
        #expect(setAside.holdsData)
        // A step still holds the part (a sync of its data): its lock is taken.
        let busy = reservation(root, job: "x.url", claim: 1, setAside: setAside)
        _ = busy.perform()
        guard case .ownerBusy = busy.choice else {
            Issue.record("expected to wait for its own part: \(busy.choice)")
            return
        }
        #expect(busy.keepsEarlier)
        open = nil
        #expect(openDescriptors(to: path + "/.a.bin.part").isEmpty, "the part is closed")
        #expect(!setAside.mayStillBeLocked)

        // Its record file was never written (no descriptor was free): the record kept with the
        // part set aside vouches for the data.
        try FileManager.default.removeItem(atPath: path + "/.a.bin.part.json")
        try Data("not ours".utf8).write(to: URL(fileURLWithPath: path + "/a.bin"))
        let again = reservation(root, job: "x.url", claim: 1, setAside: setAside, distrustsData: true)
        let reopened = try reservedPart(again)
        #expect(reopened.finalName == "a.bin")
        #expect(reopened.record.part == setAside.inode, "the same file, not a new one")
        #expect(try reopened.resumableBytes() == 1000, "its data is resumed")
        #expect(!again.keepsEarlier)
        #expect(try files(in: path).filter { !$0.hasPrefix(".a.bin.part") } == ["a.bin"], "no other name taken")
        #expect(FileManager.default.contents(atPath: path + "/a.bin") == Data("not ours".utf8))
    }

    @Test("a part another download of the same job set aside is not taken by this one, though the owner is the same: rename takes a.1.bin, fail fails with exists; and a part set aside whose own descriptor is gone but whose lock another process holds is given up for the next name, not waited for")
    func setAsidePartsOfOtherDownloadsAndForeignLocks() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sibling = SetAsidePart(try partWithData(root, job: "x.url", claim: 1))
        let renamed = try reservedPart(reservation(root, job: "x.url", claim: 1, siblings: [sibling]))
        #expect(renamed.finalName == "a.1.bin")
        #expect(renamed.record.part != sibling.inode)
        let failing = reservation(root, job: "x.url", claim: 1, onConflict: .fail, siblings: [sibling])
        _ = failing.perform()
        guard case .failed(let failure) = failing.choice else {
            Issue.record("expected exists: \(failing.choice)")
            return
        }
        #expect(failure.kind == .exists)
        #expect(try inode(path + "/.a.bin.part") == sibling.inode, "the other download's part is left as it was")

        // Another process locks the set-aside part: no descriptor of this agent is waited for.
        let holder = open(path + "/.a.bin.part", O_RDONLY)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
        let moved = reservation(root, job: "x.url", claim: 1, setAside: sibling)
        _ = moved.perform()
        if case .ownerBusy = moved.choice { Issue.record("waited for a lock no descriptor of the agent holds") }
    }

    @Test("a record a part set aside with data owes (its write found no descriptor) is written for the next run, but not while another process holds the part's lock, nor over a file put under the name since")
    func owedRecordOfASetAsidePart() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let key = RecordKey(bytes: Array(repeating: 9, count: 32))
        let recordPath = path + "/.a.bin.part.json"
        func writtenValidator() -> String? { PartFile.readRecord(".a.bin.part.json", in: root, key: key)?.validator }
        // The server's file changed (v2) and the record saying so was never written.
        let setAside = try {
            let part = try partWithData(root, job: "x.url", claim: 1)
            part.describe(url: "http://h/a.bin", mirror: 0, etag: "\"v2\"", lastModified: nil, total: 4000)
            return SetAsidePart(part)
        }()
        #expect(setAside.owesRecord)
        #expect(writtenValidator() == "\"v1\"")

        let holder = open(path + "/.a.bin.part", O_RDONLY)
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
        setAside.writeOwedRecord()
        #expect(writtenValidator() == "\"v1\"", "written while another process held the part")
        close(holder)
        setAside.writeOwedRecord()
        #expect(writtenValidator() == "\"v2\"")

        try FileManager.default.removeItem(atPath: path + "/.a.bin.part")
        try FileManager.default.removeItem(atPath: recordPath)
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: path + "/.a.bin.part"))
        setAside.writeOwedRecord()
        #expect(!FileManager.default.fileExists(atPath: recordPath), "a record written beside a file that is not the part")
    }

    @Test("a reservation that answers with a wait (another owner of the name) leaves the part set aside on disk; if the job left meanwhile, its release removes it")
    func setAsidePartOfAWaitingReservation() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        // The part was set aside in sub/; the job's destination is now the root (a reload), where
        // y owns a.bin.
        let setAside = try reserveAndSetAside(root, job: "x.url", claim: 1, subfolder: "sub")
        #expect(openDescriptors(to: path + "/sub").isEmpty, "the part set aside holds no descriptor, of its subfolder neither")
        let owner = reservation(root, job: "y.url", claim: 2)
        _ = owner.perform()
        let waiting = reservation(root, job: "x.url", claim: 1, onConflict: .overwrite, setAside: setAside)
        _ = waiting.perform()
        guard case .ownerBusy = waiting.choice else {
            Issue.record("expected to wait for y.url: \(waiting.choice)")
            return
        }
        #expect(waiting.keepsEarlier)
        #expect(try files(in: path + "/sub") == [".a.bin.part"])
        waiting.release(keeping: false)
        #expect(try files(in: path + "/sub").isEmpty)
    }

    @Test("a download whose earlier run took a.1.bin (held, stopped or interrupted with partial data) takes a.1.bin again, with its data, when a.bin is free by then; if a.1.bin was written by someone else meanwhile it takes a.bin and its earlier part is removed")
    func recordedEarlierName() throws {
        let (root, path) = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let other = reservation(root, job: "y.url", claim: 2)
        _ = other.perform()
        // x takes a.1.bin and writes 1,000 bytes; it is held (its part closed when the
        // reservation goes), y is cancelled (a.bin free again), and x is released.
        let recordedPath = try writePartially(root, job: "x.url", claim: 1)
        #expect(recordedPath == path + "/a.1.bin")
        other.release(keeping: false)

        let again = reservation(root, job: "x.url", claim: 1, recorded: recordedPath)
        let resumed = try reservedPart(again)
        #expect(resumed.finalName == "a.1.bin", "the name the job had, not the one freed since")
        #expect(try resumed.resumableBytes() == 1000, "its data is resumed")
        again.release(keeping: true)

        try Data("not ours".utf8).write(to: URL(fileURLWithPath: path + "/a.1.bin"))
        let moved = reservation(root, job: "x.url", claim: 1, recorded: recordedPath)
        let fresh = try reservedPart(moved)
        #expect(fresh.finalName == "a.bin")
        #expect(try files(in: path) == [".a.bin.part", "a.1.bin"], "the earlier part and its record are removed, the other file kept")
    }
}
