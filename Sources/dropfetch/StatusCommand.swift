import ArgumentParser
import DropFetch
import Glibc

/// `dropfetch status`: what the spool and the agents' state files say, whether an agent runs or not.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the queue, active downloads with progress, and recent results (read from the spool).",
        discussion: """
            Reads the spool only, so it works whether or not an agent runs. The text shows aligned \
            tables: active downloads (bytes, size, percent, speed, ETA), jobs waiting (next try, \
            attempts, last error), held jobs and recent results, sizes in KiB/MiB/GiB. --watch redraws \
            it every second until interrupted (Ctrl-C). With --json it prints one object: inbox (a \
            count), active, waiting and held (arrays of state objects) and recent (the newest status \
            records of done/ and failed/, newest first), and with schedule: or quota: in the config, schedule \
            (windows in force, limits, next change) and quotas (used, left, reset). With --html it prints the status page once: the \
            self-contained HTML page an agent writes to status_page, without the last hour's throughput \
            (only a running agent counts it); printed once, it neither reloads itself nor says it does. \
            Exit status: 0, 2 config or usage error, 3 \
            the spool does not exist.
            """)

    @OptionGroup var options: ConfigOption
    @Flag(help: "One JSON object: inbox, active, waiting, held, recent.") var json = false
    @Flag(help: "Redraw every second until interrupted.") var watch = false
    @Flag(help: "The status page (self-contained HTML), once.") var html = false

    func validate() throws {
        if [watch, json, html].filter({ $0 }).count > 1 {
            throw ValidationError("--watch, --json and --html cannot be combined")
        }
    }

    func run() throws {
        let config = try options.loadForExistingSpool()
        if html {
            var page = StatusPage.read(config: config, throughput: nil, writer: "dropfetch status --html")
            page.reloads = false
            print(page.html(), terminator: "")
            return
        }
        guard watch else {
            let status = SpoolStatus.read(config: config)
            print(json ? status.json() : status.text())
            return
        }
        StatusWatch(config: config).run()
    }
}
