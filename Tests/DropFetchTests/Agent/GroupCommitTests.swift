import Foundation
import Glibc
import Testing
@testable import DropFetch

/// docs/architecture.md "Group commit": what is asked for in one loop turn is synced together on
/// the worker, each file once, and each step runs only after its own syncs, with their error.
@Suite("Group commit")
struct GroupCommitTests {
    /// A scratch folder with `count` files written in it, opened for writing.
    static func files(_ count: Int) throws -> (folder: DirectoryHandle, files: [FileDescriptor], path: String) {
        let path = FileManager.default.temporaryDirectory.path + "/dropfetch-commit-\(UUID().uuidString)"
        let folder = try DirectoryHandle.openRoot(path, create: true)
        let files = try (0..<count).map { index in
            let file = try folder.open("f\(index)", flags: O_WRONLY | O_CREAT | O_EXCL)
            try file.write(Array("data \(index)\n".utf8))
            return file
        }
        return (folder, files, path)
    }

    /// Waits (with a deadline) for the worker's batch to come back, as the loop's poll would, then collects it.
    static func collect(_ commit: GroupCommit) throws {
        try awaitBatch(commit)
        commit.collect()
        while commit.hasReadySteps { commit.runReadySteps() }
    }

    /// Polls the descriptor the loop polls, with a deadline, until the batch in flight is back.
    static func awaitBatch(_ commit: GroupCommit) throws {
        let descriptor = try #require(commit.descriptor)
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        #expect(poll(&entry, 1, 10_000) == 1, "the batch did not come back within 10 s")
    }

    @Test("with fsync off a step of syncs only goes on at once; a file to create still goes to the worker")
    func offCompletesAtOnce() throws {
        let (folder, files, path) = try Self.files(1)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: false) { error in Issue.record("worker: \(error)") }
        var ran = false
        commit.sync([.file(files[0]), .folder(folder)]) { error in
            #expect(error == nil)
            ran = true
        }
        #expect(ran && commit.isIdle && commit.syncs == 0)
        // A file to create still goes to the worker, and is written there.
        var created = false
        commit.sync([.data(files[0]), .newFile(path: path + "/status.json", bytes: Array("{}".utf8), mode: 0o644)]) { error in
            #expect(error == nil)
            created = true
        }
        #expect(!created && !commit.isIdle)
        commit.flush()
        #expect(commit.batches == 1 && commit.syncs == 1, "only the file: \(commit.syncs)")
        try Self.collect(commit)
        #expect(created)
        #expect(try String(contentsOfFile: path + "/status.json", encoding: .utf8) == "{}")
    }

    /// A task that creates one file (O_EXCL): done twice, its second answer would be EEXIST.
    final class CreateFile: WorkerTask {
        struct Request: WorkerRequest {
            let path: String
            func perform() -> Int32 {
                let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
                if fd >= 0 { close(fd) }
                return fd >= 0 ? 0 : errno
            }
        }
        let request: Request
        private(set) var answers: [Int32] = []
        init(_ path: String) { request = Request(path: path) }
        func received(_ answer: Int32) -> SystemError? {
            answers.append(answer)
            return answer == 0 ? nil : SystemError(code: answer, operation: "create", path: request.path)
        }
    }

    @Test("inline (fsync: false): no worker; a step runs before sync returns, and a task several steps wait on runs once")
    func inlineRunsInPlace() throws {
        let (_, _, path) = try Self.files(0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: true, inline: true) { error in Issue.record("worker: \(error)") }
        #expect(commit.descriptor == nil, "an inline commit has no worker to poll")
        let task = CreateFile(path + "/once")
        var errors: [SystemError?] = []
        for _ in 0..<3 { commit.sync([.task(task)]) { errors.append($0) } }
        #expect(errors.count == 3 && errors.allSatisfy { $0 == nil }, "\(errors)")
        #expect(task.answers == [0], "the task ran \(task.answers.count) times")
        #expect(FileManager.default.fileExists(atPath: path + "/once"))
        #expect(commit.isIdle)
        // The next turn's task with the same request is a task of its own: it runs, and fails here.
        commit.flush()
        let again = CreateFile(path + "/once")
        var failure: SystemError?
        commit.sync([.task(again)]) { failure = $0 }
        #expect(failure?.code == EEXIST)
    }

    @Test("with a worker, a task done here runs before performHere returns and sends no batch; one asked for after goes to the worker")
    func performHereRunsInPlace() throws {
        let (_, _, path) = try Self.files(0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        #expect(commit.descriptor != nil && !commit.performsInline)
        let here = CreateFile(path + "/here")
        var error: SystemError?? = .none
        commit.performHere(here) { error = $0 }
        #expect(error == .some(nil), "the step did not run in place")
        #expect(here.answers == [0] && FileManager.default.fileExists(atPath: path + "/here"))
        #expect(commit.batches == 0 && commit.isIdle)
        let there = CreateFile(path + "/there")
        var ran = false
        commit.sync([.task(there)]) { _ in ran = true }
        #expect(!ran && !commit.isIdle, "a sync waits for the worker")
        commit.flush()
        try Self.collect(commit)
        #expect(ran && commit.batches == 1 && FileManager.default.fileExists(atPath: path + "/there"))
    }

    @Test("requests of one turn form one batch; a folder shared by two steps is synced once; steps wait for the batch")
    func oneBatchPerTurn() throws {
        let (folder, files, path) = try Self.files(3)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        var finished: [Int] = []
        for (index, file) in files.enumerated() {
            commit.sync([.data(file), .folder(folder)]) { error in
                #expect(error == nil)
                finished.append(index)
            }
        }
        #expect(finished.isEmpty && !commit.isIdle)
        commit.flush()
        #expect(commit.batches == 1 && commit.syncs == 4, "3 files and their one folder: \(commit.syncs) syncs")
        // Asked for while a batch is in flight: waits for the next one.
        var later = false
        commit.sync([.file(files[0])]) { _ in later = true }
        commit.flush()
        #expect(commit.batches == 1)
        try Self.collect(commit)
        #expect(finished == [0, 1, 2])
        #expect(commit.batches == 2, "collecting sends what was asked meanwhile")
        #expect(!later)
        try Self.collect(commit)
        #expect(later && commit.isIdle)
    }

    @Test("a sync that fails reaches the steps that asked for it, and only those")
    func failureReachesItsSteps() throws {
        let (folder, files, path) = try Self.files(1)
        defer { try? FileManager.default.removeItem(atPath: path) }
        // fsync(2) of a pipe fails with EINVAL.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let pipeEnd = FileDescriptor(rawValue: ends[1], path: "pipe")
        defer { close(ends[0]) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        var failed: SystemError?
        var good: SystemError?? = .none
        commit.sync([.folder(folder), .file(pipeEnd)]) { failed = $0 }
        commit.sync([.file(files[0]), .folder(folder)]) { good = .some($0) }
        commit.flush()
        try Self.collect(commit)
        #expect(failed?.code == EINVAL && failed?.path == "pipe", "\(String(describing: failed))")
        #expect(good == .some(nil))
    }

    @Test("ready steps run in order, a budget's worth per turn: at least one, the rest on the next turns")
    func stepsRunWithinABudget() throws {
        let (_, files, path) = try Self.files(3)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        var order: [Int] = []
        for (index, file) in files.enumerated() { commit.sync([.data(file)]) { _ in order.append(index) } }
        commit.flush()
        try Self.awaitBatch(commit)
        commit.collect()
        #expect(order.isEmpty && commit.hasReadySteps && !commit.isIdle)
        commit.runReadySteps(budget: 0)
        #expect(order == [0])
        commit.runReadySteps(budget: 0)
        commit.runReadySteps(budget: 0)
        #expect(order == [0, 1, 2] && !commit.hasReadySteps && commit.isIdle)
    }

    @Test("a ready step's captures are freed as it runs, not when the last of the batch has run")
    func stepReleasedAsItRuns() throws {
        let (_, files, path) = try Self.files(2)
        defer { try? FileManager.default.removeItem(atPath: path) }
        final class Held {}
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        weak var first: Held?
        do {
            let held = Held()
            first = held
            commit.sync([.data(files[0])]) { _ in _ = held }
        }
        commit.sync([.data(files[1])]) { _ in }
        commit.flush()
        try Self.awaitBatch(commit)
        commit.collect()
        #expect(first != nil, "held by its step until it runs")
        commit.runReadySteps(budget: 0)
        #expect(commit.hasReadySteps, "the second step still waits")
        #expect(first == nil, "the first step's captures went with it")
    }

    @Test("the worker creates a new file with its bytes, once the batch is sent")
    func newFileOnTheWorker() throws {
        let (_, _, path) = try Self.files(1)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        var result: SystemError?? = .none
        commit.sync([.newFile(path: path + "/status.json", bytes: Array("{\"state\":\"done\"}".utf8), mode: 0o644)]) {
            result = .some($0)
        }
        #expect(!FileManager.default.fileExists(atPath: path + "/status.json"), "created before the batch was sent")
        commit.flush()
        try Self.collect(commit)
        #expect(result == .some(nil), "the step did not run, or failed: \(String(describing: result))")
        #expect(try String(contentsOfFile: path + "/status.json", encoding: .utf8) == "{\"state\":\"done\"}")
        let mode = try FileManager.default.attributesOfItem(atPath: path + "/status.json")[.posixPermissions] as? Int
        #expect(mode == 0o644)
    }

    @Test("two state writes of one file in one batch: the later bytes are on disk, written once")
    func replacedFileKeepsTheLaterBytes() throws {
        let (_, _, path) = try Self.files(0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        var completions = 0
        for text in ["first", "second"] {
            commit.sync([.replacedFile(path: path + "/x.state.json", bytes: Array(text.utf8))]) { error in
                #expect(error == nil)
                completions += 1
            }
        }
        commit.flush()
        try Self.collect(commit)
        #expect(completions == 2)
        #expect(try String(contentsOfFile: path + "/x.state.json", encoding: .utf8) == "second")
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["x.state.json"], "a temp file was left")
        #expect(commit.syncs == 1)
    }

    /// The nice value and scheduling policy of each of this process's threads (fields 19 and 41 of
    /// /proc/self/task/<tid>/stat).
    static func threadSchedules() -> [(nice: Int, policy: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid in
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            // After "pid (comm)" come the fields from 3 (state) on.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 38, let nice = Int(fields[16]), let policy = Int(fields[38]) else { return nil }
            return (nice, policy)
        }
    }

    @Test("the sync worker thread runs at nice 10 under SCHED_BATCH, so that it yields to the loop and never preempts it on waking")
    func workerRunsNiced() throws {
        let (folder, _, path) = try Self.files(0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let commit = GroupCommit(durable: true) { error in Issue.record("worker: \(error)") }
        // A batch that came back proves the worker thread has started (and set its priority first).
        commit.sync([.folder(folder)]) { #expect($0 == nil) }
        commit.flush()
        try Self.collect(commit)
        let schedules = Self.threadSchedules()
        #expect(schedules.contains { $0.nice == 10 && $0.policy == 3 /* SCHED_BATCH */ }, "threads (nice, policy): \(schedules)")
        #expect(sched_getscheduler(0) == 0, "the calling thread left SCHED_OTHER")
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 0, "the process itself was reniced")
    }
}
