@testable import DropFetch
import Foundation
import Logging
import Testing

/// A complete `.part` given its final name as the worker does it (`PartPublication`), under each
/// `on_conflict`, and refused when its folder was moved away from below the destination.
@Suite("Publishing on the worker")
struct PartPublicationTests {
    /// A destination with `a.bin` already there, and a reserved `.part` of `a.bin` in `sub/` holding "new".
    private func makePart() throws -> (DirectoryHandle, PartFile, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("publish-\(UUID().uuidString)").path
        let root = try DirectoryHandle.openRoot(path, create: true)
        let folder = try root.descend("sub", create: true)
        try "old".write(toFile: path + "/sub/a.bin", atomically: false, encoding: .utf8)
        guard case .ours(let part) = try PartFile.reserve("a.bin", in: folder, for: PartOwner(job: "x.url", claim: 1),
                                                          mode: 0o644, durable: false, key: RecordKey(bytes: Array(repeating: 9, count: 32))) else {
            throw SystemError(code: EEXIST, operation: "reserve")
        }
        try "new".write(toFile: part.path, atomically: false, encoding: .utf8)
        return (root, part, path)
    }

    private func publish(_ part: PartFile, below root: DirectoryHandle, _ policy: Config.ConflictPolicy) -> PartPublication.Ending {
        let publication = PartPublication(part, as: "a.bin", below: root, onConflict: policy)
        #expect(publication.perform() == nil)
        return publication.ending
    }

    private func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    @Test("rename takes the next free name and leaves the old file; overwrite replaces it; fail fails with exists")
    func underEachPolicy() throws {
        let (root, part, path) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard case .published(let name) = publish(part, below: root, .rename) else {
            Issue.record("not published under rename")
            return
        }
        #expect(name == "a.1.bin")
        #expect(read(path + "/sub/a.1.bin") == "new" && read(path + "/sub/a.bin") == "old")
        #expect(!FileSystem.exists(part.path))

        let (root2, part2, path2) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path2) }
        guard case .failed(let failure) = publish(part2, below: root2, .fail) else {
            Issue.record("published under fail")
            return
        }
        #expect(failure.kind == .exists)
        #expect(read(path2 + "/sub/a.bin") == "old" && FileSystem.exists(part2.path))
        guard case .published("a.bin") = publish(part2, below: root2, .overwrite) else {
            Issue.record("not published under overwrite")
            return
        }
        #expect(read(path2 + "/sub/a.bin") == "new")
    }

    @Test("a folder moved away from below the destination is not published into")
    func movedFolder() throws {
        let (root, part, path) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileSystem.rename(path + "/sub", to: path + "/elsewhere")
        guard case .failed(let failure) = publish(part, below: root, .overwrite) else {
            Issue.record("published into a moved folder")
            return
        }
        #expect(failure.kind == .invalidJob)
        #expect(read(path + "/elsewhere/a.bin") == "old")
    }

    @Test("a job cancelled while publishing loses the file it published and the record; a file of another inode under the name stays")
    func removalAfterPublishing() throws {
        let (root, part, path) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let publication = PartPublication(part, as: "a.bin", below: root, onConflict: .rename)
        _ = publication.perform()
        guard case .published("a.1.bin") = publication.ending else {
            Issue.record("not published: \(publication.ending)")
            return
        }
        #expect(PartRemoval(part, publication: publication).perform() == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path + "/sub") == ["a.bin"])
        #expect(read(path + "/sub/a.bin") == "old")

        let (root2, part2, path2) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path2) }
        let overwriting = PartPublication(part2, as: "a.bin", below: root2, onConflict: .overwrite)
        _ = overwriting.perform()
        // Replaced by someone else before the removal ran: not the part's file any more.
        try FileManager.default.removeItem(atPath: path2 + "/sub/a.bin")
        try "theirs".write(toFile: path2 + "/sub/a.bin", atomically: false, encoding: .utf8)
        _ = PartRemoval(part2, publication: overwriting).perform()
        #expect(read(path2 + "/sub/a.bin") == "theirs")
        #expect(!FileSystem.exists(path2 + "/sub/" + part2.recordName))
    }

    @Test("a removal asked for while the part's publication is held for the next finish batch goes right after it, in the batch sent when the one away is back")
    func removalBehindAHeldPublication() throws {
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        let batch = FinishBatch()
        var endings: [String: JobFinish.Ending] = [:]
        func end(_ name: String, _ part: PartFile, _ publication: PartPublication) {
            let item = JobFinish.Item(part: .init(data: part.file, publication: publication.request, index: 0), filing: nil, spoolFolders: [])
            batch.add(item) { endings[name] = $0 }
        }
        func flush() -> Bool {
            batch.flush(to: commit, limit: 64, durable: true, crashPlan: nil, fence: nil, logger: Logger(label: "test"))
        }
        let (root1, part1, path1) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path1) }
        end("first", part1, PartPublication(part1, as: "a.bin", below: root1, onConflict: .rename))
        #expect(flush())
        commit.flush()
        // Cancelled while its publication waits for the first batch.
        let (root2, part2, path2) = try makePart()
        defer { try? FileManager.default.removeItem(atPath: path2) }
        let publication2 = PartPublication(part2, as: "a.bin", below: root2, onConflict: .rename)
        end("second", part2, publication2)
        batch.remove(PartRemoval(part2, publication: publication2), on: commit)
        #expect(!flush() && batch.count == 1)
        try GroupCommitTests.awaitBatch(commit)
        commit.collect { _ = flush() }
        #expect(batch.isEmpty && commit.batches == 2, "the held end and the removal went with the collect")
        while commit.hasReadySteps { commit.runReadySteps() }
        try GroupCommitTests.collect(commit)
        guard case .published("a.1.bin") = endings["first"], case .published("a.1.bin") = endings["second"] else {
            Issue.record("\(endings)")
            return
        }
        #expect(read(path1 + "/sub/a.1.bin") == "new")
        // Published, then removed: the removal did not run before the rename.
        #expect(try FileManager.default.contentsOfDirectory(atPath: path2 + "/sub") == ["a.bin"])
        #expect(read(path2 + "/sub/a.bin") == "old")
    }
}
