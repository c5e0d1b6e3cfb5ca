import ArgumentParser
import DropFetch

/// `dropfetch purge`: finished jobs' records removed now (HistoryPurge), with or without an agent.
struct Purge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove finished jobs' records from done/ and failed/ now.",
        discussion: """
            Removes the record pairs (<name>.url and <name>.status.json) of finished jobs that the \
            options select, else those the config's history: keep and max_jobs select, oldest (by \
            the status file's finished time) first, and prints how many it removed. Nothing in \
            inbox/, work/, hold/ or the destination is touched; a status file that cannot be read is \
            kept. Works with or without a running agent, also beside other agents purging the same \
            spool. --dry-run removes nothing and prints how many it would remove. Exit status: 0; 2 \
            config or usage error, or no option and no history: in the config (nothing is removed); \
            3 the spool does not exist or cannot be used.
            """)

    @OptionGroup var options: ConfigOption
    @Option(name: .customLong("older-than"), help: ArgumentHelp(
        "Remove finished jobs whose finished time is older than this (90m, 30d).", valueName: "duration"))
    var olderThan: String?
    @Option(name: .customLong("keep-jobs"), help: ArgumentHelp(
        "Keep at most this many finished jobs (done/ and failed/ together), removing the oldest.", valueName: "N"))
    var keepJobs: Int?
    @Flag(name: .customLong("dry-run"), help: "Remove nothing; print how many would be removed.") var dryRun = false
    @Flag(help: "One JSON object: dry_run, selected, removed, kept, unreadable.") var json = false

    func validate() throws {
        if let olderThan, Config.History.duration(olderThan) == nil {
            throw ValidationError("--older-than: expected an integer with s, m, h or d (90m, 30d), got '\(olderThan)'")
        }
        if let keepJobs, keepJobs < 0 { throw ValidationError("--keep-jobs: expected 0 or more, got \(keepJobs)") }
    }

    func run() throws {
        let config = try options.loadForExistingSpool()
        let rule = HistoryPurge.rule(olderThan: olderThan.flatMap(Config.History.duration), keepJobs: keepJobs, config: config)
        do {
            let report = try HistoryPurge.run(config: config, rule: rule, dryRun: dryRun)
            print(json ? report.json() : report.text())
        } catch .noRule {
            printError("dropfetch: \(HistoryPurge.Refusal.noRule) (config: \(options.origin))")
            throw ExitCode(2)
        } catch {
            printError("dropfetch: \(error)")
            throw ExitCode(3)
        }
    }
}
