import ArgumentParser
import DropFetch

/// `dropfetch check`: the config and what `run` would need from the system, without running.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate the config and the spool; exit 0 or 2.",
        discussion: """
            Checks, with the permissions of the user running it and without creating anything: the \
            config file (errors name the line, column and key), that the spool, the destination and \
            every class destination exist or can be created and written, that the folder of \
            metrics_file and of status_page exist and are writable, and that each hook program exists and is executable. \
            Each problem is printed with its path. Settings that load but cannot do what they ask \
            (split.connections above concurrency.per_host) are printed as warnings and do not change \
            the exit status. Exit status: 0 all well, 2 a problem was found.
            """)

    @OptionGroup var options: ConfigOption

    func run() throws {
        let config = try options.load()
        for warning in config.warnings { printError("dropfetch: check: warning: \(warning)") }
        let problems = SpoolInspection.problems(config: config)
        for problem in problems { printError("dropfetch: check: \(problem)") }
        if !problems.isEmpty { throw ExitCode(2) }
        print("config OK (\(options.origin)); spool \(config.spool) usable")
    }
}
