import Testing
@testable import DropFetch

/// docs/spool.md: names ending in `.url` in any case are jobs; hidden names and other endings are not.
@Suite("Job names")
struct JobNameTests {
    @Test("`.url` in any case is a job", arguments: ["x.url", "X.URL", "report.Url", "a.uRl", "ü.URL", "x.url.url"])
    func jobNames(name: String) {
        #expect(Spool.isJobName(name))
    }

    @Test("hidden names, bare extensions, look-alikes and other endings are not jobs", arguments: [
        ".url", ".URL", ".x.url", ".x.URL.tmp", "x.url.tmp", "x.urls", "xurl", "x.ur", "x\u{0E}URL", "x.u\u{52}\u{0C}",
        "x.ürl", "",
    ])
    func notJobNames(name: String) {
        #expect(!Spool.isJobName(name))
    }
}
