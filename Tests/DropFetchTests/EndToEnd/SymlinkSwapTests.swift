import DropFetch
import Foundation
import Testing

/// docs/security.md, invariant 4: a `dir=` folder that an attacker with write access to the
/// destination turns into a symlink while the agent runs (once, or back and forth as fast as the
/// kernel allows) never lets a byte land outside the destination, and every job still ends filed.
@Suite("A destination folder swapped for a symlink while the agent runs", .serialized)
struct SymlinkSwapTests {
    typealias Tree = HostileInputTests.Tree

    /// A destination beside a folder it must never write into, with one canary file in it.
    final class Setup {
        let fixture: SpoolFixture
        let server: TestHTTPServer
        var outside: String { fixture.root.path + "/outside" }
        var sub: String { fixture.destination + "/sub" }
        var bodies: [String: [UInt8]] = [:]

        init(config: String = "") throws {
            fixture = try SpoolFixture(extraConfig: config)
            server = try TestHTTPServer()
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
            try Data("nothing may write here\n".utf8).write(to: URL(fileURLWithPath: outside + "/canary.txt"))
        }

        /// Serves fresh bytes for `name` and drops a job that saves them as `dir=<dir>` / `name`.
        func dropJob(_ job: String, file name: String, dir: String, size: Int = 20_000, seed: UInt64) throws {
            let body = TestHTTPServer.randomBytes(size, seed: seed)
            bodies[name] = body
            server.serve("/swap/" + name, body: body)
            try fixture.drop(job, "\(server.url("/swap/" + name))\n  dir=\(dir)\n")
        }

        func sha256(of path: String) -> String? {
            FileManager.default.contents(atPath: path).map { TestHTTPServer.sha256Hex(Array($0)) }
        }

        func sha256(served name: String) -> String? { bodies[name].map(TestHTTPServer.sha256Hex) }

        /// Whether `job` has been filed in done/ or failed/.
        func filed(_ job: String) -> Bool {
            fixture.jobs(in: "done").contains(job) || fixture.jobs(in: "failed").contains(job)
        }
    }

    @Test("sub is a real folder for one job and a symlink for the next, in one running agent: nothing outside")
    func realThenSymlink() throws {
        let setup = try Setup()
        let outsideBefore = Tree.walk(setup.outside)
        try FileManager.default.createDirectory(atPath: setup.sub, withIntermediateDirectories: true)
        try setup.fixture.startDaemon()
        defer { _ = try? setup.fixture.stopDaemon() }

        try setup.dropJob("first.url", file: "first.bin", dir: "sub", seed: 1)
        #expect(try waitUntil(timeout: .seconds(30)) { setup.filed("first.url") }, "first.url was never filed")
        #expect(setup.fixture.jobs(in: "done") == ["first.url"])
        #expect(setup.sha256(of: setup.sub + "/first.bin") == setup.sha256(served: "first.bin"))

        // The folder the agent has just used becomes a symlink to the outside folder.
        try FileManager.default.moveItem(atPath: setup.sub, toPath: setup.fixture.destination + "/sub.old")
        try FileManager.default.createSymbolicLink(atPath: setup.sub, withDestinationPath: setup.outside)
        try setup.dropJob("second.url", file: "second.bin", dir: "sub", seed: 2)
        try setup.dropJob("third.url", file: "third.bin", dir: "sub/deeper", seed: 3)
        #expect(try waitUntil(timeout: .seconds(30)) { setup.filed("second.url") && setup.filed("third.url") })
        for job in ["second.url", "third.url"] {
            let status = try setup.fixture.status("failed", job)
            #expect(status.error?.kind == .invalidJob, "\(job): \(status.error?.description ?? "not failed")")
        }
        #expect(Tree.changes(from: outsideBefore, to: Tree.walk(setup.outside)).isEmpty, "written outside the destination")
        #expect(Tree.names(setup.fixture.destination + "/sub.old") == ["first.bin"], "the moved folder was written into")

        // A real folder again: the next job lands in it, not in the folder first used under that name.
        try FileManager.default.removeItem(atPath: setup.sub)
        try FileManager.default.createDirectory(atPath: setup.sub, withIntermediateDirectories: false)
        try setup.dropJob("fourth.url", file: "fourth.bin", dir: "sub", seed: 4)
        #expect(try waitUntil(timeout: .seconds(30)) { setup.filed("fourth.url") }, "fourth.url was never filed")
        #expect(setup.fixture.jobs(in: "done") == ["first.url", "fourth.url"])
        #expect(setup.sha256(of: setup.sub + "/fourth.bin") == setup.sha256(served: "fourth.bin"))
        #expect(Tree.changes(from: outsideBefore, to: Tree.walk(setup.outside)).isEmpty, "written outside the destination")
        #expect(try setup.fixture.stopDaemon() == 0)
    }

    @Test("a thread swaps sub and a symlink in a tight loop while 200 jobs write into it: nothing outside, every job filed with a kind")
    func tightSwapLoop() throws {
        let setup = try Setup(config: "concurrency: { total: 16, per_host: 16 }\n")
        let outsideBefore = Tree.walk(setup.outside)
        try FileManager.default.createDirectory(atPath: setup.sub, withIntermediateDirectories: true)
        let spare = setup.fixture.destination + "/.spare"
        try FileManager.default.createSymbolicLink(atPath: spare, withDestinationPath: setup.outside)
        let jobs = (0..<200).map { String(format: "j%03d", $0) }
        for (number, job) in jobs.enumerated() {
            // Some files take several writes, so a swap can fall between them.
            try setup.dropJob(job + ".url", file: job + ".bin", dir: number % 4 == 0 ? "sub/inner" : "sub",
                              size: number % 10 == 0 ? 600_000 : 20_000, seed: 100 + UInt64(number))
        }
        try FileManager.default.createDirectory(atPath: setup.sub + "/inner", withIntermediateDirectories: false)

        let swapper = Swapper(folder: setup.fixture.destination, first: "sub", second: ".spare")
        swapper.start()
        let exit = try setup.fixture.runOnce(timeout: 300)
        let swaps = swapper.stop()

        #expect(swaps.failures == 0, "renameat2(RENAME_EXCHANGE) failed \(swaps.failures) times (errno \(swaps.lastErrno))")
        #expect(swaps.count > 1_000, "only \(swaps.count) swaps happened during the run")
        #expect(exit == 0 || exit == 1, "run --once exited \(exit)")
        #expect(Tree.changes(from: outsideBefore, to: Tree.walk(setup.outside)).isEmpty, "written outside the destination")

        // The real folder is `sub` or `.spare` now, whichever the last swap left.
        let real = [setup.sub, spare].first { Tree.type(of: $0) == S_IFDIR }
        #expect(real != nil, "the real folder is gone")
        let done = Set(setup.fixture.jobs(in: "done"))
        let failed = Set(setup.fixture.jobs(in: "failed"))
        #expect(setup.fixture.jobs(in: "inbox").isEmpty)
        for (number, job) in jobs.enumerated() {
            let name = job + ".url"
            #expect(done.contains(name) != failed.contains(name), "\(name) is in neither or both of done/ and failed/")
            if failed.contains(name) {
                let status = try setup.fixture.status("failed", name)
                #expect(status.error?.kind == .invalidJob, "\(name): \(status.error?.description ?? "no error")")
            } else if done.contains(name), let real {
                let path = real + (number % 4 == 0 ? "/inner/" : "/") + job + ".bin"
                #expect(setup.sha256(of: path) == setup.sha256(served: job + ".bin"),
                        "\(name): \(path) does not hold what was served")
            }
        }
        print("symlink swap: \(swaps.count) swaps, \(done.count) done, \(failed.count) failed")
    }
}

/// Exchanges two names in one folder with renameat2(RENAME_EXCHANGE) on its own thread until stopped,
/// so that each name is always present, as a folder or as the symlink.
private final class Swapper: @unchecked Sendable {
    typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
    private static let renameExchange: UInt32 = 2
    private let folder: String
    private let first: String
    private let second: String
    private let lock = NSLock()
    private var running = true
    private var count = 0
    private var failures = 0
    private var lastErrno: Int32 = 0
    private let finished = DispatchSemaphore(value: 0)

    init(folder: String, first: String, second: String) {
        self.folder = folder
        self.first = first
        self.second = second
    }

    func start() {
        // glibc 2.28+ exports renameat2 but declares it only under _GNU_SOURCE.
        let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2")!
        let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
        let thread = Thread { [self] in
            let fd = open(folder, O_RDONLY | O_DIRECTORY)
            defer { close(fd); finished.signal() }
            while lock.withLock({ running }) {
                let result = renameat2(fd, first, fd, second, Swapper.renameExchange)
                let code = errno
                lock.withLock {
                    if result == 0 { count += 1 } else { failures += 1; lastErrno = code }
                }
            }
        }
        thread.name = "Swapper"
        thread.start()
    }

    /// Stops the loop and waits for it; returns how many swaps succeeded and failed.
    func stop() -> (count: Int, failures: Int, lastErrno: Int32) {
        lock.withLock { running = false }
        finished.wait()
        return lock.withLock { (count, failures, lastErrno) }
    }
}
