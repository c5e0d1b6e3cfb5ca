import CLinux
import Foundation
import Glibc
import Synchronization
import Testing
@testable import DropFetch

/// The hand-off between the loop and a `SyncWorker` (docs/architecture.md, "Threads"): batches
/// through a `Locked` queue, back in the order they were sent, with an eventfd in the
/// loop's poll set that is readable while finished batches wait and quiet once they are taken.
@Suite("Sync worker")
struct SyncWorkerTests {
    /// What the requests below did, in the order the worker did it.
    final class Log: Sendable {
        private let entries = Locked<[String]>([])

        func append(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// A request that notes its name in the log and answers with it.
    struct Note: WorkerRequest {
        let log: Log
        let name: String

        func perform() -> String {
            log.append(name)
            return name
        }
    }

    /// A request that blocks the worker until the test opens the gate (an eventfd it reads).
    final class Gate: Sendable {
        let started = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        private let events: FileDescriptor

        init() throws {
            let fd = eventfd(0, Int32(EFD_CLOEXEC))
            try #require(fd >= 0)
            events = FileDescriptor(rawValue: fd, path: "eventfd (gate)")
        }

        var hasStarted: Bool { started.load(ordering: .sequentiallyConsistent) }
        var hasFinished: Bool { finished.load(ordering: .sequentiallyConsistent) }

        func open() {
            _ = eventfd_write(events.rawValue, 1)
        }

        struct Wait: WorkerRequest {
            let gate: Gate

            func perform() -> String {
                gate.started.store(true, ordering: .sequentiallyConsistent)
                var count: eventfd_t = 0
                while eventfd_read(gate.events.rawValue, &count) != 0, dfl_errno() == EINTR {}
                gate.finished.store(true, ordering: .sequentiallyConsistent)
                return "gate"
            }
        }
    }

    static func batch(_ requests: [any WorkerRequest]) -> SyncWorker.Batch {
        SyncWorker.Batch(targets: requests.map { request in
            SyncWorker.Target(action: .run { _ = request.perform() }, path: "")
        })
    }

    static func answers(_ batch: SyncWorker.Batch) -> [String] {
        batch.outcomes.map { outcome in
            switch outcome {
            case .done: return "done"
            case .failed(let error): return "failed: \(error)"
            }
        }
    }

    /// Whether the descriptor polls readable within `milliseconds` (0: now).
    static func isReadable(_ descriptor: Int32, within milliseconds: Int32 = 0) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) == 1
    }

    /// The batches the worker sends back, collected as the loop would (poll, then `completed`),
    /// until `count` are back or 10 s have passed.
    static func collect(_ count: Int, from worker: SyncWorker) -> [SyncWorker.Batch] {
        let deadline = MonotonicClock.now() + 10_000
        var batches: [SyncWorker.Batch] = []
        while batches.count < count {
            let left = deadline - MonotonicClock.now()
            guard left > 0 else { break }
            if isReadable(worker.descriptor, within: Int32(left)) { batches += worker.completed() }
        }
        return batches
    }

    @Test("batches come back in the order they were sent, each target's outcome in its place")
    func batchesInOrder() throws {
        let folder = FileManager.default.temporaryDirectory.path + "/dropfetch-worker-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let worker = try SyncWorker()
        let log = Log()
        var first = Self.batch([Note(log: log, name: "a1")]).targets
        first.append(SyncWorker.Target(action: .create(bytes: Array("x".utf8), mode: 0o644, durable: true), path: folder + "/x"))
        first.append(Self.batch([Note(log: log, name: "a2")]).targets[0])
        worker.submit(SyncWorker.Batch(targets: first))
        worker.submit(Self.batch([Note(log: log, name: "b1"), Note(log: log, name: "b2")]))
        worker.submit(Self.batch([Note(log: log, name: "c1")]))
        let back = Self.collect(3, from: worker)
        #expect(back.map(Self.answers) == [["done", "done", "done"], ["done", "done"], ["done"]])
        #expect(log.all == ["a1", "a2", "b1", "b2", "c1"])
        #expect(try String(contentsOfFile: folder + "/x", encoding: .utf8) == "x")
        #expect(worker.completed().isEmpty && !Self.isReadable(worker.descriptor))
    }

    @Test("the descriptor is quiet while a batch runs, readable once it is done, and quiet again once completed() took it")
    func descriptorFollowsTheQueue() throws {
        let worker = try SyncWorker()
        let gate = try Gate()
        #expect(!Self.isReadable(worker.descriptor))
        worker.submit(Self.batch([Gate.Wait(gate: gate)]))
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(1)) { gate.hasStarted })
        #expect(!Self.isReadable(worker.descriptor), "readable before the batch was done")
        #expect(worker.completed().isEmpty)
        gate.open()
        #expect(Self.isReadable(worker.descriptor, within: 10_000), "the batch did not come back within 10 s")
        let back = worker.completed()
        #expect(back.map(Self.answers) == [["done"]])
        #expect(!Self.isReadable(worker.descriptor), "completed() left the descriptor readable")
        #expect(worker.completed().isEmpty)
    }

    @Test("a descriptor in a batch stays open while the worker holds it, and closes once the batch is let go")
    func descriptorHeldByTheBatch() throws {
        let path = FileManager.default.temporaryDirectory.path + "/dropfetch-worker-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let worker = try SyncWorker()
        weak var held: FileDescriptor?
        do {
            let file = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_EXCL)
            held = file
            worker.submit(SyncWorker.Batch(targets: [SyncWorker.Target(action: .syncFile(file, dataOnly: true), path: path)]))
        }
        let back = Self.collect(1, from: worker)
        #expect(back.map(Self.answers) == [["done"]])
        #expect(held != nil, "closed while the batch was still held")
        _ = consume back
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(1)) { held == nil }, "the descriptor outlived its batch")
    }

    /// The state letter of thread `tid` of this process (field 3 of /proc/self/task/<tid>/stat).
    static func state(ofThread tid: String) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ").first?.first
    }

    /// What the test thread and the thread that opens the gate tell each other.
    final class Handshake: Sendable {
        let dropping = Atomic<Bool>(false)
        let sawJoin = Atomic<Bool>(false)

        var isDropping: Bool { dropping.load(ordering: .sequentiallyConsistent) }
        var openedInJoin: Bool { sawJoin.load(ordering: .sequentiallyConsistent) }
    }

    @Test("deinit ends the worker after the batch it is on and joins it; a batch not begun is dropped")
    func deinitJoinsWithWorkPending() throws {
        let gate = try Gate()
        let log = Log()
        var worker: SyncWorker? = try SyncWorker()
        worker?.submit(Self.batch([Gate.Wait(gate: gate), Note(log: log, name: "rest of A")]))
        worker?.submit(Self.batch([Note(log: log, name: "B")]))
        #expect(try waitUntil(timeout: .seconds(10), interval: .milliseconds(1)) { gate.hasStarted })
        // "<pid>/task/<tid>"
        let me = try #require(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")
            .split(separator: "/").last.map(String.init))
        let handshake = Handshake()
        // The gate opens once this thread sleeps in deinit's pthread_join(3): once `dropping` is
        // set it sleeps nowhere else, since the worker holds no lock while it waits at the gate.
        let opener = try WorkerThread.start("pthread_create (gate opener)") { [gate, handshake, me] in
            let joining = (try? waitUntil(timeout: .seconds(10), interval: .milliseconds(1)) {
                handshake.isDropping && SyncWorkerTests.state(ofThread: me) == "S"
            }) ?? false
            handshake.sawJoin.store(joining, ordering: .sequentiallyConsistent)
            // At the deadline too, so that a failing test does not hang in the join.
            gate.open()
        }
        defer { pthread_join(opener, nil) }
        handshake.dropping.store(true, ordering: .sequentiallyConsistent)
        worker = nil
        #expect(handshake.openedInJoin, "the gate opened before deinit waited")
        #expect(gate.hasFinished, "deinit returned before its batch was done")
        #expect(log.all == ["rest of A"], "the batch begun is finished, the one not begun dropped: \(log.all)")
    }
}

/// A worker task's trip as the group commit makes it: the request runs on the worker, its answer
/// comes back typed to the task on the loop.
@Suite("Worker exchange")
struct WorkerExchangeTests {
    /// A task whose request counts the bytes of a name, and that keeps the count it receives.
    final class Length: WorkerTask {
        struct Request: WorkerRequest {
            let name: String
            func perform() -> Int { name.utf8.count }
        }

        let request: Request
        private(set) var answer: Int?

        init(_ name: String) { request = Request(name: name) }

        func received(_ answer: Int) -> SystemError? {
            self.answer = answer
            return answer > 3 ? nil : SystemError(code: EINVAL, operation: "measure", path: request.name)
        }
    }

    @Test("the worker's answer reaches its task through the group commit, with the error the task makes of it")
    func answersReachTheirTasks() throws {
        let commit = GroupCommit(durable: false) { Issue.record("no worker: \($0)") }
        let long = Length("abcdef")
        let short = Length("ab")
        var errors: [String: SystemError?] = [:]
        commit.sync([.task(long)]) { errors["long"] = $0 }
        commit.sync([.task(short)]) { errors["short"] = $0 }
        commit.sync([.task(long)]) { errors["long again"] = $0 }
        commit.flush()
        let deadline = ContinuousClock.now + .seconds(10)
        while errors.count < 3, ContinuousClock.now < deadline {
            var entry = pollfd(fd: commit.descriptor ?? -1, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 100)
            commit.collect()
            commit.runReadySteps()
        }
        #expect(long.answer == 6 && short.answer == 2)
        #expect(errors["long"].map { $0 == nil } == true && errors["long again"].map { $0 == nil } == true)
        #expect(errors["short"]??.code == EINVAL)
    }

    @Test("without a worker the exchange is the same: work, then collect on the caller's thread")
    func exchangeInPlace() {
        let task = Length("four")
        let exchange = task.exchange()
        #expect(task.answer == nil)
        exchange.work()
        #expect(exchange.collect() == nil && task.answer == 4)
        #expect(exchange.collect()?.code == ECANCELED, "an answer is taken once")
    }
}
