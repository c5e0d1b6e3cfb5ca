import Foundation
import Testing

/// The pieces of the test support that need no network: SHA-256, test data, range decisions, polling.
@Suite(.timeLimit(.minutes(1))) struct TestSupportTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    ])
    func sha256MatchesTheFIPSVectors(message: String, digest: String) {
        #expect(SHA256.hex(Array(message.utf8)) == digest)
    }

    @Test func sha256OfAMillionAs() {
        #expect(SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func sha256InPiecesEqualsSha256sumOfTheFile() throws {
        let bytes = TestHTTPServer.randomBytes(200_003, seed: 3)
        var hasher = SHA256()
        var offset = 0
        for size in [0, 1, 63, 64, 65, 127, 1000, 4096].cycled(until: bytes.count) {
            let end = min(bytes.count, offset + size)
            hasher.update(Array(bytes[offset..<end]))
            offset = end
        }
        let pieces = hasher.finalizeHex()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sha-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let output = Pipe()
        process.standardOutput = output
        try process.runSerially()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let expected = String(printed.prefix(64))
        #expect(pieces == expected)
        #expect(TestHTTPServer.sha256Hex(bytes) == expected)
        #expect(try SHA256.hex(fileAt: path) == expected)
    }

    @Test func randomBytesAreDeterministicPerSeed() {
        let a = TestHTTPServer.randomBytes(1001)
        #expect(a.count == 1001)
        #expect(a == TestHTTPServer.randomBytes(1001))
        #expect(Array(a.prefix(13)) == TestHTTPServer.randomBytes(13))
        #expect(a != TestHTTPServer.randomBytes(1001, seed: 2))
        #expect(Set(a).count > 200)
    }

    @Test(arguments: [
        (nil, nil, TestHTTPServer.RangeAnswer.full),
        ("bytes=0-", nil, .partial(first: 0, last: 99)),
        ("bytes=10-19", nil, .partial(first: 10, last: 19)),
        ("Bytes = 10-19", nil, .partial(first: 10, last: 19)),
        ("bytes=90-500", nil, .partial(first: 90, last: 99)),
        ("bytes=-30", nil, .partial(first: 70, last: 99)),
        ("bytes=-300", nil, .partial(first: 0, last: 99)),
        ("bytes=100-", nil, .unsatisfiable),
        ("bytes=100-200", nil, .unsatisfiable),
        ("bytes=-0", nil, .unsatisfiable),
        ("bytes=20-10", nil, .full),
        ("bytes=0-1,5-6", nil, .full),
        ("items=0-1", nil, .full),
        ("bytes=x-", nil, .full),
        ("bytes=10-", "\"v1\"", .partial(first: 10, last: 99)),
        ("bytes=10-", "\"v2\"", .full),
        ("bytes=10-", "W/\"v1\"", .full),
        ("bytes=10-", "Tue, 01 Jul 2025 10:00:00 GMT", .partial(first: 10, last: 99)),
        ("bytes=10-", "Wed, 02 Jul 2025 10:00:00 GMT", .full),
        ("bytes=100-", "\"v2\"", .full),
    ] as [(String?, String?, TestHTTPServer.RangeAnswer)])
    func rangeAnswerFollowsRFC9110(range: String?, ifRange: String?, expected: TestHTTPServer.RangeAnswer) {
        let answer = TestHTTPServer.RangeAnswer.decide(
            range: range, ifRange: ifRange, size: 100, etag: "\"v1\"", lastModified: "Tue, 01 Jul 2025 10:00:00 GMT")
        #expect(answer == expected)
    }

    @Test func timesWrapperCountsDownAndUnwraps() {
        let armed = TestHTTPServer.ArmedFault(.times(3, .times(2, .ignoreRange)))
        #expect(armed.remaining == 2)
        guard case .ignoreRange = armed.fault else {
            Issue.record("expected ignoreRange, got \(armed.fault)")
            return
        }
        #expect(TestHTTPServer.ArmedFault(.endlessBody).remaining == nil)
    }

    @Test func waitUntilReturnsOnceTheConditionHolds() throws {
        let started = ContinuousClock.now
        var calls = 0
        #expect(try waitUntil(timeout: .seconds(5), interval: .milliseconds(1)) {
            calls += 1
            return calls == 3
        })
        #expect(calls == 3)
        #expect(started.duration(to: .now) < .seconds(5))
    }

    @Test func waitUntilGivesUpAtTheDeadline() throws {
        let started = ContinuousClock.now
        #expect(try !waitUntil(timeout: .milliseconds(100)) { false })
        #expect(started.duration(to: .now) >= .milliseconds(100))
    }

    @Test func waitUntilPassesErrorsThrough() {
        struct Failure: Error {}
        #expect(throws: Failure.self) { try waitUntil { throw Failure() } }
    }
}

private extension Array {
    /// The elements repeated until their running total reaches `total` (for chunk sizes).
    func cycled(until total: Int) -> [Element] where Element == Int {
        var result: [Int] = []
        var sum = 0
        var index = 0
        while sum < total {
            result.append(self[index % count])
            sum += self[index % count]
            index += 1
        }
        return result
    }
}
