@testable import DropFetch
import Foundation
import Glibc
import Logging
import Testing

/// The claim and the filing moves as the worker runs them (`JobClaim`, `JobFinish` with no part to publish): what they
/// leave on disk and what they report back to the loop.
@Suite("Spool steps on the worker")
struct SpoolStepTests {
    private func makeSpool() throws -> (Spool, String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("spool-steps-\(UUID().uuidString)").path
        let spool = Spool(root: root, agentID: "a1", durable: true)
        try spool.open()
        return (spool, root)
    }

    private func drop(_ name: String, in root: String, body: String = "http://h/x\n") throws {
        try body.write(toFile: root + "/inbox/" + name, atomically: false, encoding: .utf8)
    }

    private func record(_ job: String, _ state: StatusRecord.State = .done) -> StatusRecord {
        StatusRecord(job: job, state: state, className: "default", priority: 0, agent: "a1", submitted: Timestamp.now())
    }

    @Test("a claim moves the job into work/<agent>/ and brings back its bytes and inode; a second one of the name gets x.1.url")
    func claimReadsTheJob() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try drop("x.url", in: root, body: "http://h/x\n  out=a\n")
        let first = JobClaim(.init(relativePath: "x.url", modified: 0), in: spool, limit: 1 << 20, naming: nil, now: Int64(time(nil)))
        #expect(first.perform() == nil)
        guard case .claimed(let name, let previous, .success(let contents)) = first.ending else {
            Issue.record("not claimed: \(first.ending)")
            return
        }
        #expect(name == "x.url")
        #expect(previous == nil)
        #expect(String(decoding: contents.bytes, as: UTF8.self) == "http://h/x\n  out=a\n")
        #expect(contents.inode == UInt64(try FileSystem.lstatus(root + "/work/a1/x.url").st_ino))
        #expect(!FileSystem.exists(root + "/inbox/x.url"))

        try drop("x.url", in: root)
        let second = JobClaim(.init(relativePath: "x.url", modified: 0), in: spool, limit: 1 << 20, naming: nil, now: Int64(time(nil)))
        _ = second.perform()
        guard case .claimed(let other, _, _) = second.ending else {
            Issue.record("not claimed: \(second.ending)")
            return
        }
        #expect(other == "x.1.url")
    }

    private static let key = RecordKey(bytes: Array(repeating: 9, count: 32))

    @Test("a claim given the index's read of the file takes it while inode, size and mtime still match, else reads the file again")
    func claimTakesTheIndexRead() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try drop("x.url", in: root, body: "http://h/one\n")
        let indexed = try indexRead("x.url", in: spool)
        // Same length, other bytes: what comes back shows which one the claim took.
        let read = JobFileReader.Contents(bytes: Array("http://h/two\n".utf8), inode: indexed.inode, modified: indexed.modified)
        #expect(claimedText("x.url", in: spool, known: read) == "http://h/two\n")

        // Written again with another size after the index read: the claim reads the file.
        try drop("y.url", in: root, body: "http://h/y\n")
        let stale = try indexRead("y.url", in: spool)
        try drop("y.url", in: root, body: "http://h/y-longer\n")
        #expect(claimedText("y.url", in: spool, known: stale) == "http://h/y-longer\n")
    }

    /// The inbox index's read of inbox file `name`.
    private func indexRead(_ name: String, in spool: Spool) throws -> JobFileReader.Contents {
        try JobFileReader.contents(of: name, in: spool.routingFolder(""), limit: 1 << 20).get()
    }

    /// The job file's text as the claim of `name`, given the index's read `known`, took it; nil
    /// when it was not claimed.
    private func claimedText(_ name: String, in spool: Spool, known: JobFileReader.Contents) -> String? {
        let claim = JobClaim(.init(relativePath: name, modified: 0), in: spool, limit: 1 << 20, known: known, naming: nil, now: Int64(time(nil)))
        _ = claim.perform()
        guard case .claimed(_, _, .success(let taken)) = claim.ending else { return nil }
        return String(decoding: taken.bytes, as: UTF8.self)
    }

    /// What a claim's worker needs to take names in `destination` (`OutputNames.claimNaming`).
    private func naming(destination: String, protocols: [String] = ["http", "https"]) throws -> JobClaim.Naming {
        var config = Config()
        config.protocols = protocols
        return JobClaim.Naming(shared: Config.Shared(config), roots: [:], defaultDestination: destination,
                               key: SpoolStepTests.key, generation: 0)
    }

    @Test("a claim of a fresh job also takes its first download's name: a .part owned by the job file's name and inode")
    func claimTakesTheFirstName() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try drop("x.url", in: root, body: "http://h/a.bin\nhttp://h/b.bin\n")
        let claim = JobClaim(.init(relativePath: "x.url", modified: 0), in: spool, limit: 1 << 20,
                             naming: try naming(destination: root + "/out"), now: Int64(time(nil)))
        #expect(claim.perform() == nil)
        let first = try #require(claim.firstPart)
        #expect(first.className == "default")
        #expect(claim.openedRoot?.path == root + "/out")
        // The first download's name only; the second is taken when it starts.
        let folder = try DirectoryHandle.openRoot(root + "/out", create: false)
        let inode = UInt64(try FileSystem.lstatus(root + "/work/a1/x.url").st_ino)
        let owner = try #require(PartFile.readOwner(ofPart: ".a.bin.part", in: folder, key: SpoolStepTests.key))
        #expect(owner.isOwned(by: PartOwner(job: "x.url", claim: inode)))
        #expect(!FileSystem.exists(root + "/out/.b.bin.part"))
    }

    @Test("an invalid job, a refused scheme or a released state: claimed, but no name is taken with the claim")
    func claimLeavesUnusualJobsAlone() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try drop("bad.url", in: root, body: "this is not a job\n")
        try drop("ftp.url", in: root, body: "ftp://h/f.bin\n")
        try drop("back.url", in: root, body: "http://h/c.bin\n")
        let released = StatusRecord(job: "back.url", state: .queued, className: "default", priority: 0, agent: "a0",
                                    submitted: Timestamp.now(), attempts: 2)
        try Data(released.encoded()).write(to: URL(fileURLWithPath: root + "/inbox/.back.state.json"))
        for job in ["bad.url", "ftp.url", "back.url"] {
            let claim = JobClaim(.init(relativePath: job, modified: 0), in: spool, limit: 1 << 20,
                                 naming: try naming(destination: root + "/out"), now: Int64(time(nil)))
            #expect(claim.perform() == nil)
            guard case .claimed = claim.ending else {
                Issue.record("\(job) not claimed: \(claim.ending)")
                continue
            }
            #expect(claim.firstPart == nil, "\(job)")
            if job == "back.url", case .claimed(_, let previous, _) = claim.ending { #expect(previous?.attempts == 2) }
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []
        #expect(left.isEmpty, "\(left)")
    }

    @Test("a job gone from the inbox (another agent took it) ends as gone, and nothing appears in work/")
    func claimOfAGoneJob() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let claim = JobClaim(.init(relativePath: "x.url", modified: 0), in: spool, limit: 1 << 20, naming: nil, now: Int64(time(nil)))
        #expect(claim.perform() == nil)
        guard case .gone = claim.ending else {
            Issue.record("expected gone: \(claim.ending)")
            return
        }
        #expect(spool.ownJobs().isEmpty)
    }

    @Test("a filing puts the status and the job file in done/, removes the state file, and the next of the name gets x.1")
    func filingMovesBoth() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for round in 0..<2 {
            try drop("x.url", in: root)
            let name = try #require(try spool.claim(.init(relativePath: "x.url", modified: 0)))
            try "{}".write(toFile: spool.statePath(for: name), atomically: false, encoding: .utf8)
            let status = record("x.url")
            let filing = SpoolFiling(status, as: .done, from: spool.work + "/" + name, claim: 0, in: spool, publishedRecords: [], filedAt: FilingJournal.now())
            let finish = JobFinish([JobFinish.Item(part: nil, filing: filing, spoolFolders: [])], durable: false, crashPlan: nil)
            #expect(finish.perform() == nil)
            guard case .filed(nil, _, let filed) = finish.endings[0] else {
                Issue.record("not filed: \(finish.endings[0])")
                return
            }
            spool.noteFiled(filed)
            #expect(filed.jobPath == root + (round == 0 ? "/done/x.url" : "/done/x.1.url"))
            #expect(!FileSystem.exists(spool.statePath(for: name)))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: root + "/done").sorted()
        #expect(names == ["x.1.status.json", "x.1.url", "x.status.json", "x.url"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: spool.work).filter { !$0.hasPrefix(".lock") }.isEmpty)
    }

    @Test("a filing's journal line carries the time the loop planned it at (the agent clock), not the worker's clock")
    func journalLineAtTheAgentClock() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try drop("x.url", in: root)
        let name = try #require(try spool.claim(.init(relativePath: "x.url", modified: 0)))
        // 2001-09-09T01:46:40.123456789Z: far from any real now.
        let filing = SpoolFiling(record("x.url"), as: .done, from: spool.work + "/" + name, claim: 0, in: spool,
                                 publishedRecords: [], filedAt: 1_000_000_000_123_456_789)
        let finish = JobFinish([JobFinish.Item(part: nil, filing: filing, spoolFolders: [])], durable: false, crashPlan: nil)
        #expect(finish.perform() == nil)
        let journal = try String(contentsOfFile: spool.journal.path, encoding: .utf8)
        #expect(journal.split(separator: "\n").dropFirst() == ["1000000000123456789 d x.url"], "\(journal)")
    }

    @Test("each end of a finish batch is handed out once, and its item is let go with it while the others stay")
    func finishEndsTakenOneByOne() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        var items: [JobFinish.Item] = []
        for job in ["a.url", "b.url"] {
            try drop(job, in: root)
            let name = try #require(try spool.claim(.init(relativePath: job, modified: 0)))
            let filing = SpoolFiling(record(job), as: .done, from: spool.work + "/" + name, claim: 0, in: spool, publishedRecords: [], filedAt: FilingJournal.now())
            items.append(JobFinish.Item(part: nil, filing: filing, spoolFolders: []))
        }
        let finish = JobFinish(items, durable: false, crashPlan: nil)
        #expect(finish.perform() == nil)
        guard case .filed(nil, let first, _) = finish.takeEnding(0) else {
            Issue.record("a.url not filed")
            return
        }
        #expect(first.job == "a.url")
        #expect(finish.request.items[0].filing == nil, "the first item is let go once its end is taken")
        #expect(finish.request.items[1].filing?.status.job == "b.url", "the second stays until its own step")
        guard case .filed(nil, let second, _) = finish.takeEnding(1) else {
            Issue.record("b.url not filed")
            return
        }
        #expect(second.job == "b.url")
        let done = try FileManager.default.contentsOfDirectory(atPath: root + "/done").sorted()
        #expect(done == ["a.status.json", "a.url", "b.status.json", "b.url"])
    }

    @Test("a durable finish batch: a part whose data cannot be synced is not published and its job stays claimed; the others are published and filed")
    func durableBatchWithAFailedSync() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let destination = try DirectoryHandle.openRoot(root + "/dest", create: true)
        let out = try destination.descend("out", create: true)
        var items: [JobFinish.Item] = []
        for job in ["a", "b", "c"] {
            try drop(job + ".url", in: root)
            let name = try #require(try spool.claim(.init(relativePath: job + ".url", modified: 0)))
            let part = "." + job + ".bin.part"
            let written = try out.open(part, flags: O_RDWR | O_CREAT | O_EXCL)
            try written.write(Array("bytes of \(job)\n".utf8))
            // b's descriptor is O_PATH: fsync(2), syncfs(2) and sync_file_range(2) refuse it (EBADF), as a failing disk would.
            let data = job == "b" ? try out.open(part, flags: 0o10000000 /* O_PATH */) : written
            let publication = PartPublication.Request(part: .init(folder: out, name: part, finalName: job + ".bin"), target: job + ".bin",
                                                      root: destination, onConflict: .overwrite, published: .init())
            let filing = SpoolFiling(record(job + ".url"), as: .done, from: spool.work + "/" + name, claim: 0, in: spool,
                                     publishedRecords: [], filedAt: FilingJournal.now())
            items.append(JobFinish.Item(part: .init(data: data, publication: publication, index: 0), filing: filing,
                                        spoolFolders: try spool.filedFolders(.done, from: spool.work + "/" + name)))
        }
        let finish = JobFinish(items, durable: true, crashPlan: nil)
        #expect(finish.perform() == nil)
        for position in [0, 2] {
            guard case .filed(let name?, _, _) = finish.endings[position] else {
                Issue.record("item \(position) not filed: \(finish.endings[position])")
                continue
            }
            #expect(name == ["a", "b", "c"][position] + ".bin")
        }
        guard case .notPublished(let failure) = finish.endings[1] else {
            Issue.record("b was published: \(finish.endings[1])")
            return
        }
        #expect(failure.description.contains("Bad file descriptor"), "\(failure)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted() == [".b.bin.part", "a.bin", "c.bin"])
        #expect(try String(contentsOfFile: out.path + "/c.bin", encoding: .utf8) == "bytes of c\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/done").sorted()
                == ["a.status.json", "a.url", "c.status.json", "c.url"])
        #expect(FileSystem.exists(spool.work + "/b.url"))
    }

    @Test("with fsync off a turn of fewer than 4 ends is filed on the loop while the worker is idle; 4 ends, or ends while the worker has a batch, go to the worker",
          arguments: [(3, false), (4, false), (3, true)])
    func finishBatchGoesWhereItsSizeSays(_ count: Int, _ workerBusy: Bool) throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let commit = GroupCommit(durable: false) { error in Issue.record("worker: \(error)") }
        #expect(commit.descriptor != nil && !commit.performsInline, "fsync off keeps a finish worker")
        var busyRan = false
        if workerBusy {
            // A batch in flight: the worker holds it while this turn's ends are added.
            commit.sync([.task(GroupCommitTests.CreateFile(root + "/busy"))]) { _ in busyRan = true }
            commit.flush()
        }
        let batch = FinishBatch()
        var filed: [String] = []
        let jobs = (0..<count).map { "j\($0).url" }
        for job in jobs {
            try drop(job, in: root)
            let name = try #require(try spool.claim(.init(relativePath: job, modified: 0)))
            let filing = SpoolFiling(record(job), as: .done, from: spool.work + "/" + name, claim: 0, in: spool,
                                     publishedRecords: [], filedAt: FilingJournal.now())
            batch.add(JobFinish.Item(part: nil, filing: filing, spoolFolders: [])) { ending in
                if case .filed = ending { filed.append(job) } else { Issue.record("\(job): \(ending)") }
            }
        }
        batch.flush(to: commit, limit: 64, durable: false, crashPlan: nil, fence: nil, logger: Logger(label: "test"))
        let inPlace = count < 4 && !workerBusy
        if inPlace {
            #expect(filed == jobs, "filed in the turn, in order")
            #expect(commit.batches == 0 && commit.isIdle)
        } else {
            #expect(filed.isEmpty && !commit.isIdle, "waits for the worker")
            if workerBusy {
                // The ends go in the batch after the one the worker holds.
                try GroupCommitTests.collect(commit)
                #expect(busyRan && filed.isEmpty)
            }
            commit.flush()
            try GroupCommitTests.collect(commit)
            #expect(filed == jobs, "filed by the worker, in order")
            #expect(commit.batches == (workerBusy ? 2 : 1), "\(commit.batches) batches")
        }
        let done = try FileManager.default.contentsOfDirectory(atPath: root + "/done").filter { $0.hasSuffix(".url") }.sorted()
        #expect(done == jobs.sorted())
        #expect(try FileManager.default.contentsOfDirectory(atPath: spool.work).filter { $0.hasSuffix(".url") }.isEmpty)
    }

    @Test("with fsync on, ends asked for while a batch is away wait for it and go together, at most `limit` a batch, in order")
    func finishBatchWaitsForTheBatchAway() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        let batch = FinishBatch()
        var filed: [String] = []
        func end(_ job: String) throws {
            try drop(job, in: root)
            let name = try #require(try spool.claim(.init(relativePath: job, modified: 0)))
            let filing = SpoolFiling(record(job), as: .done, from: spool.work + "/" + name, claim: 0, in: spool,
                                     publishedRecords: [], filedAt: FilingJournal.now())
            batch.add(JobFinish.Item(part: nil, filing: filing, spoolFolders: try spool.filedFolders(.done, from: spool.work + "/" + name))) { ending in
                if case .filed = ending { filed.append(job) } else { Issue.record("\(job): \(ending)") }
            }
        }
        func flush() -> Bool {
            batch.flush(to: commit, limit: 3, durable: true, crashPlan: nil, fence: nil, logger: Logger(label: "test"))
        }
        try end("j0.url")
        #expect(flush() && batch.isEmpty)
        commit.flush()
        let jobs = (1...5).map { "j\($0).url" }
        for job in jobs { try end(job) }
        #expect(!flush() && batch.count == 5 && !batch.isReadyToSend, "held while j0's batch is away")
        try GroupCommitTests.collect(commit)
        #expect(filed == ["j0.url"] && commit.batches == 1)
        #expect(batch.isReadyToSend)
        #expect(flush() && batch.count == 2, "three go, two wait")
        #expect(!flush(), "held again")
        commit.flush()
        try GroupCommitTests.collect(commit)
        #expect(filed == ["j0.url", "j1.url", "j2.url", "j3.url"] && commit.batches == 2)
        #expect(flush() && batch.isEmpty)
        commit.flush()
        try GroupCommitTests.collect(commit)
        #expect(filed == ["j0.url"] + jobs && commit.batches == 3 && commit.isIdle)
        let done = try FileManager.default.contentsOfDirectory(atPath: root + "/done").filter { $0.hasSuffix(".url") }.sorted()
        #expect(done == (["j0.url"] + jobs).sorted())
        #expect(try FileManager.default.contentsOfDirectory(atPath: spool.work).filter { $0.hasSuffix(".url") }.isEmpty)
    }

    @Test("a job file replaced under its name after the claim is not filed: the filing ends as left and removes its status")
    func filingOfAReplacedJob() throws {
        let (spool, root) = try makeSpool()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try drop("x.url", in: root)
        let name = try #require(try spool.claim(.init(relativePath: "x.url", modified: 0)))
        let claimed = UInt64(try FileSystem.lstatus(spool.work + "/" + name).st_ino)
        // Held, then another job dropped straight into the work folder under the same name.
        try FileSystem.rename(spool.work + "/" + name, to: spool.hold + "/" + name)
        try "http://h/other\n".write(toFile: spool.work + "/" + name, atomically: false, encoding: .utf8)
        let status = record("x.url", .failed)
        let filing = SpoolFiling(status, as: .failed, from: spool.work + "/" + name, claim: claimed, in: spool, publishedRecords: [], filedAt: FilingJournal.now())
        let finish = JobFinish([JobFinish.Item(part: nil, filing: filing, spoolFolders: [])], durable: true, crashPlan: nil)
        #expect(finish.perform() == nil)
        guard case .left(nil, _) = finish.endings[0] else {
            Issue.record("expected left: \(finish.endings[0])")
            return
        }
        #expect(FileSystem.exists(spool.work + "/" + name))
        #expect(!FileSystem.exists(filing.temp))
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/failed").isEmpty)
    }
}
