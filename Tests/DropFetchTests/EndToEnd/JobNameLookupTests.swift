import Foundation
import Testing

/// Issue 35, item 11: `JOB` in control commands (docs/cli.md): an exact name first, then a unique
/// prefix, both case-sensitive, at every routing depth; a name that matches several jobs is an
/// error listing them (exit 1) that moves nothing.
@Suite("Job names in control commands")
struct JobNameLookupTests {
    /// Puts `name` into `hold/` (below `folder`), as `hold` leaves it.
    func held(_ fixture: SpoolFixture, _ name: String, folder: String = "") throws {
        let directory = fixture.spool + "/hold" + (folder.isEmpty ? "" : "/" + folder)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "http://127.0.0.1:9/\(name).bin\n".write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }

    /// A spool that exists (as after a first run), with no agent running.
    func spool() throws -> SpoolFixture {
        let fixture = try SpoolFixture()
        for folder in ["inbox", "work/test-agent", "hold", "done", "failed"] {
            try FileManager.default.createDirectory(atPath: fixture.spool + "/" + folder, withIntermediateDirectories: true)
        }
        return fixture
    }

    @Test("release B takes B2.url, the one job starting with B, not b.url (case counts); release b then takes b.url")
    func prefixIsCaseSensitive() throws {
        let fixture = try spool()
        try held(fixture, "b.url")
        try held(fixture, "B2.url")
        let result = try fixture.capture(["release", "B"])
        #expect(result.ending == .exited(0), "\(result)")
        #expect(fixture.jobs(in: "inbox") == ["B2.url"])
        #expect(fixture.jobs(in: "hold") == ["b.url"])
        #expect(try fixture.capture(["release", "b"]).ending == .exited(0))
        #expect(fixture.jobs(in: "inbox").sorted() == ["B2.url", "b.url"])
    }

    @Test("an exact name wins over a longer one it starts: hold ab takes ab.url, not abc.url; hold a is ambiguous")
    func exactBeforePrefix() throws {
        let fixture = try spool()
        try fixture.drop("ab.url", "http://127.0.0.1:9/ab\n")
        try fixture.drop("abc.url", "http://127.0.0.1:9/abc\n")
        #expect(try fixture.capture(["hold", "ab"]).ending == .exited(0))
        #expect(fixture.jobs(in: "hold") == ["ab.url"])
        #expect(fixture.jobs(in: "inbox") == ["abc.url"])
        try fixture.drop("abd.url", "http://127.0.0.1:9/abd\n")
        let ambiguous = try fixture.capture(["hold", "a"])
        #expect(ambiguous.ending == .exited(1), "\(ambiguous)")
        #expect(ambiguous.stderr.contains("abc") && ambiguous.stderr.contains("abd"), "\(ambiguous)")
        #expect(fixture.jobs(in: "inbox").sorted() == ["abc.url", "abd.url"])
    }

    @Test("one name in two folders is ambiguous: exit 1 listing both folders, nothing moved (hold and cancel)")
    func sameNameInTwoFolders() throws {
        let fixture = try spool()
        try fixture.drop("x.url", "http://127.0.0.1:9/x1\n")
        try fixture.drop("x.url", "http://127.0.0.1:9/x2\n", folder: "r1")
        for verb in ["hold", "cancel"] {
            let result = try fixture.capture([verb, "x"])
            #expect(result.ending == .exited(1), "\(result)")
            #expect(result.stderr.contains("(inbox)") && result.stderr.contains("(inbox/r1)"), "\(result)")
            #expect(fixture.jobs(in: "inbox") == ["x.url"])
            #expect(fixture.jobs(in: "inbox/r1") == ["x.url"])
            #expect(fixture.jobs(in: "hold").isEmpty && fixture.jobs(in: "failed").isEmpty)
        }
    }

    @Test("a job two routing folders deep (inbox/r1/r2/y.url) can be held and released by its name, keeping its folders")
    func nestedRoutingFolders() throws {
        let fixture = try spool()
        try fixture.drop("y.url", "http://127.0.0.1:9/y\n", folder: "r1/r2")
        let hold = try fixture.capture(["hold", "y"])
        #expect(hold.ending == .exited(0), "\(hold)")
        #expect(fixture.jobs(in: "hold/r1/r2") == ["y.url"])
        #expect(try fixture.capture(["release", "y.url"]).ending == .exited(0))
        #expect(fixture.jobs(in: "inbox/r1/r2") == ["y.url"])
        let missing = try fixture.capture(["hold", "zz"])
        #expect(missing.ending == .exited(1), "\(missing)")
        #expect(missing.stderr.contains("no such job"), "\(missing)")
    }
}
