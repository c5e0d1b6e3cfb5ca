import Foundation
import Testing

/// docs/architecture.md "Transfers and resume" (issue 9, item 2): partial data is appended to only when
/// a strong validator proves the server's file is the same. With no validator the download
/// restarts from zero; a `206` whose validator differs from the record's is not appended.
/// Either way the published file is exactly one version, never a splice of two.
@Suite("Resume needs a matching validator, end to end")
struct ValidatorResumeTests {
    static let size = 600_000
    static let cut = 200_000
    static let version1 = TestHTTPServer.randomBytes(size, seed: 9_600)
    static let version2 = TestHTTPServer.randomBytes(size, seed: 9_601)

    /// How the server labels the file: no validator at all, or only a weak ETag (which cannot
    /// prove byte equality and is never a resume validator). The label does not change with
    /// the content.
    struct NoValidatorCase: Sendable, CustomTestStringConvertible {
        let etag: String?
        var testDescription: String { etag.map { "only the weak ETag \($0)" } ?? "no ETag, no Last-Modified" }
    }

    @Test("content changes between attempts without a validator → the file is exactly version 2, not a splice",
          arguments: [NoValidatorCase(etag: nil), NoValidatorCase(etag: "W/\"same\"")])
    func noValidatorNoSplice(_ item: NoValidatorCase) throws {
        let server = try TestHTTPServer()
        // The first answer drops after `cut` bytes of version 1; every later one is version 2.
        server.serve("/plain.bin", body: Self.version1, etag: item.etag, lastModified: nil, faults: [
            .times(1, .dropAfter(bytes: Self.cut)),
            .changeETagAfterFirstRequest(to: item.etag, lastModified: nil, body: Self.version2),
        ])
        let fixture = try SpoolFixture()
        try fixture.dropSettled("plain.url", server.url("/plain.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)")

        let requests = server.completedRequests()
        try #require(requests.count >= 2, "the first attempt did not fail: \(requests)")
        #expect(requests[0].bodyBytesSent == Self.cut && requests[0].header("Range") == nil)
        let file = expectDone(fixture, "plain.url", body: Self.version2)
        if let file, let data = FileManager.default.contents(atPath: file).map(Array.init), data != Self.version2 {
            let spliced = data.count == Self.size && Array(data.prefix(Self.cut)) == Array(Self.version1.prefix(Self.cut))
                && Array(data.suffix(Self.size - Self.cut)) == Array(Self.version2.suffix(Self.size - Self.cut))
            Issue.record("the file is \(spliced ? "version 1's first \(Self.cut) bytes spliced onto version 2" : "neither version")")
        }
        let status = fixture.statusObject("done", "plain.url")
        #expect(StatusFields.int(StatusFields.firstDownload(status)["resumed_from"]) == 0,
                "nothing proved the partial data current: \(StatusFields.firstDownload(status))")
        // A request with a Range is harmless only if its 206 data was thrown away (checked above).
        let ranged = requests.dropFirst().filter { $0.header("Range") != nil }
        if !ranged.isEmpty { print("no-validator resume: \(ranged.count) later request(s) still sent a Range: \(ranged)") }
    }

    /// The validator the record keeps, and the server's other one for the changed file.
    struct ValidatorCase: Sendable, CustomTestStringConvertible {
        let name: String
        let first: (etag: String?, lastModified: String?)
        let second: (etag: String?, lastModified: String?)
        var testDescription: String { name }
    }

    static let validatorCases = [
        ValidatorCase(name: "ETag \"v1\" then a 206 with ETag \"v2\"", first: ("\"v1\"", nil), second: ("\"v2\"", nil)),
        ValidatorCase(name: "Last-Modified only, then a 206 with a later Last-Modified",
                      first: (nil, "Tue, 01 Jul 2025 10:00:00 GMT"), second: (nil, "Wed, 02 Jul 2025 10:00:00 GMT")),
    ]

    @Test("a 206 whose validator differs from the record's is not appended: the file is version 2 in full",
          arguments: validatorCases)
    func mismatchedPartialIsNotAppended(_ item: ValidatorCase) throws {
        // A server (or cache) that honours Range whatever If-Range says: after the first,
        // cut-short answer with version 1, it serves version 2 with its own validator.
        let server = try ScriptedHTTPServer { head, number in
            number == 0
                ? .file(Self.version1, etag: item.first.etag, lastModified: item.first.lastModified, range: head.header("Range"),
                        dropAfter: Self.cut)
                : .file(Self.version2, etag: item.second.etag, lastModified: item.second.lastModified, range: head.header("Range"))
        }
        let fixture = try SpoolFixture()
        try fixture.dropSettled("changed.url", server.url("/changed.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)")

        let requests = server.requests
        try #require(requests.count >= 2, "\(requests)")
        #expect(requests[0].status == 200 && requests[0].bodyBytesSent == Self.cut)
        let file = expectDone(fixture, "changed.url", body: Self.version2)
        if let file, let data = FileManager.default.contents(atPath: file).map(Array.init),
           data.count == Self.size, Array(data.prefix(Self.cut)) == Array(Self.version1.prefix(Self.cut)) {
            Issue.record("version 1's first \(Self.cut) bytes were kept and version 2 appended to them")
        }
        let got206 = requests.dropFirst().contains { $0.status == 206 }
        if item.first.etag != nil {
            // docs/architecture.md: a strong ETag is a resume validator, so the agent asks for a Range.
            #expect(got206, "the case was not exercised: no 206 was sent after the first answer (\(requests))")
        } else if !got206 {
            print("\(item.name): the agent did not resume on Last-Modified alone; no 206 to refuse (\(requests))")
        }
        let status = fixture.statusObject("done", "changed.url")
        #expect(StatusFields.int(StatusFields.firstDownload(status)["resumed_from"]) == 0, "\(StatusFields.firstDownload(status))")
    }

    @Test("control: a 206 with the record's own ETag is appended (resumed from the cut)")
    func matchingPartialIsAppended() throws {
        let server = try ScriptedHTTPServer { head, number in
            .file(Self.version1, etag: "\"v1\"", range: head.header("Range"), dropAfter: number == 0 ? Self.cut : nil)
        }
        let fixture = try SpoolFixture()
        try fixture.dropSettled("same.url", server.url("/same.bin") + "\n")

        let once = try fixture.capture(["run", "--once"])
        #expect(once.ending == .exited(0), "\(once)")
        expectDone(fixture, "same.url", body: Self.version1)
        let requests = server.requests
        #expect(requests.map(\.status) == [200, 206], "\(requests)")
        #expect(requests.dropFirst().first?.header("Range") == "bytes=\(Self.cut)-")
        #expect(requests.dropFirst().first?.header("If-Range") == "\"v1\"")
    }
}
