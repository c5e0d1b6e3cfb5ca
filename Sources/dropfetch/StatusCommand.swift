import ArgumentParser
import DropFetch

/// `dropfetch status`: what the spool and the agents' state files say, whether an agent runs or not.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the queue, active downloads with progress, and recent results (read from the spool).",
        discussion: """
            Reads the spool only, so it works whether or not an agent runs. With --json it prints one \
            object: inbox (a count), active, waiting and held (arrays of state objects) and recent (the \
            newest status records of done/ and failed/, newest first). Exit status: 0, 2 config or \
            usage error, 3 the spool does not exist.
            """)

    @OptionGroup var options: ConfigOption
    @Flag(help: "One JSON object: inbox, active, waiting, held, recent.") var json = false

    func run() throws {
        let status = SpoolStatus.read(config: try options.loadForExistingSpool())
        print(json ? status.json() : status.text())
    }
}
