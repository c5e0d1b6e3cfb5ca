import ArgumentParser
import DropFetch
import Logging

/// `dropfetch run`: the agent, as a daemon or for one pass (`--once`).
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the agent: a daemon, or with --once until the jobs present are handled.",
        discussion: """
            As a daemon the agent watches the inbox with inotify, claims each job file as it arrives, \
            downloads it and files it in done/ or failed/ beside its status file. SIGHUP (and any \
            change of the config file) reloads the config; SIGTERM or SIGINT stops it, keeping \
            partial data for the next start. Under systemd (Type=notify) it reports READY=1, STATUS=, \
            WATCHDOG=1, RELOADING=1 and STOPPING=1 on $NOTIFY_SOCKET, and log lines carry journal \
            priorities.

            When stderr is a terminal, a progress block below the log shows each running download \
            (name, bar, percent, bytes, speed, ETA) and a total line, redrawn at most 10 times a \
            second; log lines appear above it. NO_COLOR turns its colour off; --quiet turns it off \
            and logs only warnings and errors. Log lines are logfmt (ts=… level=… msg=… job=… \
            url=… bytes=… duration=…), one per job start, finish, retry, failure and hook outcome.

            Exit status with --once: 0 every job done, 1 some failed or were cancelled, 75 some wait \
            (a retry due later than once_wait, free space, a file still being written, a schedule \
            window that pauses, a reached quota), 2 config or usage error, 3 the spool cannot be \
            used. As a daemon: 0 after a stop signal, 2 or 3 at start.
            """)

    @OptionGroup var options: ConfigOption
    @Flag(help: "Process the jobs present, then exit (0 all done, 1 some failed, 75 some wait).")
    var once = false
    @Flag(name: .shortAndLong, help: "No progress display; log only warnings and errors.")
    var quiet = false

    func run() throws {
        let config = try options.load()
        let output = LogSetup.bootstrap(level: config.logLevel, quiet: quiet)
        let logger = Logger(label: "dropfetch")
        let progress: ProgressObserver? = output.drawsProgress ? { @Sendable snapshot in output.show(snapshot) } : nil
        let status = try Agent.run(config: config,
                                   options: Agent.Options(once: once, handleSignals: true, configPath: options.path,
                                                          progress: progress),
                                   logger: logger)
        output.clear()
        if status != .success { throw ExitCode(status.rawValue) }
    }
}
