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
                             onConflict: Config.ConflictPolicy = .rename) -> PartReservation {
        PartReservation(root: root, subfolder: subfolder, dir: subfolder.isEmpty ? nil : subfolder, name: "a.bin",
                        owner: PartOwner(job: job, claim: claim), onConflict: onConflict, digest: .sha256,
                        mode: 0o644, durable: false, key: RecordKey(bytes: Array(repeating: 9, count: 32)))
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
}
