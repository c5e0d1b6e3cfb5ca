import DropFetch
import Foundation
import Glibc
import Testing

/// Issue 28, item 1: the page `dropfetch status --html` prints, loaded by headless Chromium from
/// `file://` (Debian's `chromium`; `make test` installs it), puts every job in its section with its
/// state, and a hostile name stays text. With `DROPFETCH_SCREENSHOTS=FOLDER` (`make screenshots`)
/// it also writes phone and desktop screenshots, light and dark, into FOLDER.
@Suite("Status page in a browser")
struct StatusPageBrowserTests {
    /// Debian's binary; `--no-sandbox` because the tests may run as root, where Chromium refuses its sandbox.
    static let chromium = "/usr/bin/chromium"
    static let flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                        "--disable-extensions", "--allow-file-access-from-files"]

    @Test("every job in its section with its state; the hostile names are text; no credential is shown")
    func domSections() throws {
        let spool = try StatusPageSpool()
        defer { spool.release() }
        let printed = try spool.fixture.capture(["status", "--html"])
        #expect(printed.ending == .exited(0), "\(printed.stderr)")
        let page = spool.fixture.root.path + "/page.html"
        try printed.stdout.write(toFile: page, atomically: true, encoding: .utf8)

        let run = try CommandRun(Self.flags + ["--dump-dom", "file://" + page], program: Self.chromium,
                                 in: spool.fixture.root.path, timeout: .seconds(90))
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let dom = run.stdout
        #expect(dom.contains("</html>"), "no DOM: \(run.stderr.suffix(2000))")

        #expect(PageRow.rows(of: "agents", in: dom) == [PageRow(name: "gone-agent", state: "gone"),
                                                        PageRow(name: "test-agent", state: "running")])
        #expect(PageRow.rows(of: "active", in: dom) == [PageRow(name: "big.iso.url", state: "running")])
        // The later drop has the higher priority: it runs first.
        #expect(PageRow.rows(of: "queue", in: dom) == [PageRow(name: "second.url", state: "queued"),
                                                       PageRow(name: "first.url", state: "queued")])
        #expect(PageRow.rows(of: "waiting", in: dom) == [PageRow(name: "later.url", state: "waiting")])
        #expect(PageRow.rows(of: "orphaned", in: dom) == [PageRow(name: "stranded.url", state: "orphaned")])
        #expect(PageRow.rows(of: "held", in: dom) == [PageRow(name: StatusPageSpool.hostileFile, state: "held"),
                                                      PageRow(name: "paused.url", state: "held")])
        let recent = try #require(PageRow.rows(of: "recent", in: dom))
        #expect(Set(recent) == [PageRow(name: StatusPageSpool.doneJob, state: "done"), PageRow(name: "broken.url", state: "failed")])

        // Markup in names and messages was never parsed into elements.
        for element in ["<script", "<img", "<b>"] { #expect(!dom.contains(element), "\(element) became an element") }
        #expect(dom.contains("&lt;b&gt;Not Found&lt;/b&gt;"))
        #expect(dom.contains("http_status"))
        #expect(dom.contains("2099-01-01T00:00:00Z"), "the waiting job's next try")
        #expect(!dom.contains(StatusPageSpool.secret))
        // Self-contained: no stylesheet, script, image or frame to fetch; links only within the page.
        for reference in ["<link", "<script", "src=\"", "url("] { #expect(!printed.stdout.contains(reference), "\(reference)") }
        #expect(printed.stdout.components(separatedBy: "href=\"").dropFirst().allSatisfy { $0.hasPrefix("#") })

        try screenshots(of: spool)
    }

    /// `make screenshots`: the page as an agent writes it (with a sample hour of throughput),
    /// at phone (390 px) and desktop (1280 px) widths, light and dark.
    private func screenshots(of spool: StatusPageSpool) throws {
        guard let folder = ProcessInfo.processInfo.environment["DROPFETCH_SCREENSHOTS"], !folder.isEmpty else { return }
        let config = try ConfigLoader.load(path: spool.fixture.configPath)
        let hour = (0..<60).map { minute -> Int64 in minute < 22 ? 0 : Int64((minute * 37) % 23 + 8) * 1024 * 1024 }
        let page = StatusPage.read(config: config, throughput: StatusPage.Throughput(perMinute: hour, agent: "test-agent"),
                                   writer: "agent test-agent")
        let path = spool.fixture.root.path + "/shot.html"
        try page.html().write(toFile: path, atomically: true, encoding: .utf8)
        for (name, size) in [("phone", "390,3500"), ("desktop", "1280,1850")] {
            for (scheme, extra) in [("light", [String]()), ("dark", ["--force-dark-mode"])] {
                let target = folder + "/status-page-\(name)-\(scheme).png"
                let run = try CommandRun(Self.flags + extra + ["--window-size=" + size, "--screenshot=" + target, "file://" + path],
                                         program: Self.chromium, in: spool.fixture.root.path, timeout: .seconds(90))
                #expect(run.status == 0 && FileManager.default.fileExists(atPath: target), "\(run.stderr.suffix(1000))")
            }
        }
    }
}
