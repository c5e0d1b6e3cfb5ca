@testable import DropFetch
import Foundation
import Testing

/// A loop turn's share of receiving (`ReceiveBudget`): each transfer takes its share and at least
/// one write, the rest waits for the next turn, where the transfers still running are resumed.
@Suite("Receive budget")
struct ReceiveBudgetTests {
    /// A transfer that is never started: the budget only needs its handle and counters.
    private func transfer(_ name: String, in folder: DirectoryHandle) throws -> Transfer {
        guard case .ours(let part) = try PartFile.reserve(name, in: folder, for: PartOwner(job: name + ".url", claim: 1),
                                                          mode: 0o644, durable: false, key: RecordKey(bytes: Array(repeating: 9, count: 32))) else {
            throw SystemError(code: EEXIST, operation: "reserve")
        }
        let request = TransferRequest(url: "http://127.0.0.1:9/" + name, maxFileSize: .max, connectTimeout: .seconds(1),
                                      lowSpeed: Config.LowSpeed(), protocols: ["http"], protocolList: "http")
        return try Transfer(request, part: part)
    }

    /// How many writes of `bytes` the budget admits for `transfer` in this turn.
    private func admitted(_ budget: ReceiveBudget, _ transfer: Transfer, bytes: Int, upTo limit: Int = 1000) -> Int {
        var count = 0
        while count < limit, budget.admit(transfer, bytes: bytes) { count += 1 }
        return count
    }

    @Test("each of two transfers takes its share of a turn, then pauses; the next turn resumes the running ones")
    func sharesAndResumes() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("budget-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try DirectoryHandle.openRoot(path, create: true)
        let first = try transfer("a.bin", in: folder)
        let second = try transfer("b.bin", in: folder)
        let budget = ReceiveBudget()
        let write = 256 << 10
        let share = max(ReceiveBudget.smallestShare, ReceiveBudget.bytesPerTurn / 2)

        budget.beginTurn(running: 2) { _ in nil }
        #expect(!budget.hasPaused)
        #expect(admitted(budget, first, bytes: write) == share / write)
        #expect(budget.hasPaused, "the first transfer waits for the next turn")
        #expect(admitted(budget, second, bytes: write) == share / write, "the first did not take the second's share")

        budget.beginTurn(running: 2) { key in key == first.easy.key ? first : nil }
        #expect(!budget.hasPaused)
        #expect(admitted(budget, first, bytes: write) == share / write, "a new turn, a new share")
    }

    @Test("a write larger than the share is taken when it is the transfer's first in the turn")
    func firstWriteAlwaysTaken() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("budget-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = try DirectoryHandle.openRoot(path, create: true)
        let only = try transfer("a.bin", in: folder)
        let budget = ReceiveBudget()
        budget.beginTurn(running: 1) { _ in nil }
        #expect(budget.admit(only, bytes: ReceiveBudget.bytesPerTurn * 2))
        #expect(!budget.admit(only, bytes: 1))
        budget.beginTurn(running: 1) { _ in only }
        #expect(budget.admit(only, bytes: ReceiveBudget.bytesPerTurn * 2), "every turn moves every transfer on")
    }
}

@Suite("Receive budget, end to end")
struct ReceiveBudgetRunTests {
    @Test("four large downloads at once, each paused and resumed across loop turns, are right on disk")
    func manyLargeAtOnce() throws {
        let server = try TestHTTPServer()
        let bodies = (0..<4).map { TestHTTPServer.randomBytes(12_000_000, seed: 92 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.serve("/l\(index).bin", body: body) }
        let fixture = try SpoolFixture(extraConfig: "concurrency: { total: 4, per_host: 4 }\n")
        for index in bodies.indices { try fixture.drop("l\(index).url", server.url("/l\(index).bin") + "\n") }

        #expect(try fixture.runOnce() == 0, "\(fixture.log)")

        #expect(fixture.jobs(in: "done") == ["l0.url", "l1.url", "l2.url", "l3.url"])
        for (index, body) in bodies.enumerated() {
            #expect(fixture.downloaded("l\(index).bin").map(TestHTTPServer.sha256Hex) == TestHTTPServer.sha256Hex(body))
            #expect(try fixture.status("done", "l\(index).url").downloads.first?.sha256 == TestHTTPServer.sha256Hex(body))
            #expect(server.requests(to: "/l\(index).bin").count == 1, "a download was restarted")
        }
    }
}
