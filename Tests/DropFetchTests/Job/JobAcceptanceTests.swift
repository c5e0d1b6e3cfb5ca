import Testing
@testable import DropFetch

/// The one check a parsed job passes before it is queued (JobAcceptance): the claim's worker,
/// admission and `dropfetch add` all make it, so they cannot disagree about a job.
@Suite("Job acceptance")
struct JobAcceptanceTests {
    static func spec(_ text: String) throws -> JobSpec {
        try JobFileParser.parse(Array(text.utf8))
    }

    static var config: Config {
        var config = Config()
        var iso = Config.JobClass(name: "iso")
        iso.match = Config.ClassMatch(url: "*.iso")
        iso.priority = 7
        var urgent = Config.JobClass(name: "urgent")
        urgent.match = Config.ClassMatch(folder: "urgent")
        config.classes = [urgent, iso]
        return config
    }

    @Test("a job's class, priority and lane come from the config's first matching class, or the job file")
    func accepted() throws {
        let byURL = try JobAcceptance.check(Self.spec("https://Mirror.Example.org/a.iso\n"), folder: "", config: Self.config).get()
        #expect(byURL.className == "iso" && byURL.priority == 7)
        #expect(byURL.host == "mirror.example.org", "the host as libcurl reads it, lower-cased")
        let byFolder = try JobAcceptance.check(Self.spec("priority=2\nhttps://h.example/a.iso\n"), folder: "urgent/sub",
                                               config: Self.config).get()
        #expect(byFolder.className == "urgent" && byFolder.priority == 2)
        let plain = try JobAcceptance.check(Self.spec("http://h.example/f\n"), folder: "", config: Self.config).get()
        #expect(plain.className == "default" && plain.priority == 0 && plain.jobClass == nil)
    }

    @Test("a scheme outside protocols is refused with its line, on any mirror; an unknown class= by name")
    func refused() throws {
        let mirrors = try Self.spec("# two mirrors\nhttps://a.example/f\tFTP://b.example/f\n")
        guard case .failure(let refusal) = JobAcceptance.check(mirrors, folder: "", config: Self.config) else {
            Issue.record("an ftp mirror was accepted under protocols [http, https]")
            return
        }
        #expect(refusal == .unsupportedProtocol(url: "FTP://b.example/f", scheme: "ftp", line: 2))
        let failure = refusal.failure(jobName: "x.url", protocols: ["http", "https"])
        #expect(failure.kind == .unsupportedProtocol)
        #expect(failure.message == "x.url: line 2: scheme 'ftp' is not in protocols [\"http\", \"https\"]")
        let unknown = try Self.spec("class=nightly\nhttps://a.example/f\n")
        guard case .failure(.unknownClass(let error)) = JobAcceptance.check(unknown, folder: "", config: Self.config) else {
            Issue.record("an unknown class was accepted")
            return
        }
        #expect(error.message.contains("nightly"))
    }
}
