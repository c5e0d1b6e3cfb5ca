import ArgumentParser
import DropFetch
import Logging

/// `dropfetch`: the command-line face of the agent; every subcommand parses and calls the library.
struct DropFetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dropfetch",
        abstract: "A watch-folder download agent: drop .url files into an inbox, get verified files.",
        version: DropFetchVersion.string,
        subcommands: [Run.self, Check.self, Status.self, Add.self, Hold.self, Release.self, Cancel.self, Retry.self])
}

/// The `--config` option every command takes.
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "The YAML config file (default: built-in defaults, spool ./spool).")
    var config: String?

    /// Loads the config or exits 2 with the file, line and column of the problem.
    func load() throws -> Config {
        guard let config else { return Config() }
        do {
            return try ConfigLoader.load(path: config)
        } catch {
            printError("dropfetch: \(error)")
            throw ExitCode(2)
        }
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the agent: a daemon, or with --once until the jobs present are handled.")

    @OptionGroup var options: ConfigOption
    @Flag(help: "Process the jobs present, then exit (0 all done, 1 some failed, 75 retries left).")
    var once = false

    func run() throws {
        let config = try options.load()
        LogSetup.bootstrap(level: config.logLevel)
        let logger = Logger(label: "dropfetch")
        let agent = try Agent(config: config,
                              options: Agent.Options(once: once, handleSignals: true, configPath: options.config),
                              logger: logger)
        let status = agent.run()
        if status != .success { throw ExitCode(status.rawValue) }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Validate the config and the spool; exit 0 or 2.")

    @OptionGroup var options: ConfigOption

    func run() throws {
        let config = try options.load()
        let problems = SpoolInspection.problems(config: config)
        for problem in problems { printError("dropfetch: spool: \(problem)") }
        if !problems.isEmpty { throw ExitCode(2) }
        print("config OK\(options.config.map { ": \($0)" } ?? " (built-in defaults)"); spool \(config.spool) usable")
    }
}

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write a job into the inbox, atomically.")

    @OptionGroup var options: ConfigOption
    @Argument(help: "The URL to fetch; several URLs are mirrors of one file.")
    var urls: [String]
    @Option(help: "Priority: higher runs first.") var priority: Int?
    @Option(name: .customLong("class"), help: "A class name from the config.") var className: String?
    @Option(help: "The file name to save as.") var out: String?

    func run() throws {
        let config = try options.load()
        do {
            let path = try SpoolInspection.addJob(urls: urls, priority: priority, className: className, out: out,
                                                  config: config)
            print(path)
        } catch {
            printError("dropfetch: \(error)")
            throw ExitCode(2)
        }
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the queue, active downloads with progress, and recent results (read from the spool).")

    @OptionGroup var options: ConfigOption
    @Flag(help: "One JSON object: inbox, active, waiting, held, recent.") var json = false

    func run() throws {
        let status = SpoolStatus.read(config: try options.load())
        print(json ? status.json() : status.text())
    }
}

/// hold, release, cancel and retry: one job moved between the spool folders.
protocol JobControlCommand: ParsableCommand {
    static var action: SpoolControl.Action { get }
    var options: ConfigOption { get }
    var job: String { get }
}

extension JobControlCommand {
    func run() throws {
        let config = try options.load()
        do {
            print(try SpoolControl.perform(Self.action, job: job, config: config))
        } catch {
            printError("dropfetch: \(error)")
            throw ExitCode(1)
        }
    }
}

struct Hold: JobControlCommand {
    static let configuration = CommandConfiguration(abstract: "Pause a job: move it to hold/ (its partial data is kept).")
    static let action = SpoolControl.Action.hold
    @OptionGroup var options: ConfigOption
    @Argument(help: "The job file's name, with or without .url.") var job: String
}

struct Release: JobControlCommand {
    static let configuration = CommandConfiguration(abstract: "Resume a held job: move it from hold/ to the inbox.")
    static let action = SpoolControl.Action.release
    @OptionGroup var options: ConfigOption
    @Argument(help: "The job file's name, with or without .url.") var job: String
}

struct Cancel: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a job: remove its partial data and file it in failed/ as cancelled.")
    static let action = SpoolControl.Action.cancel
    @OptionGroup var options: ConfigOption
    @Argument(help: "The job file's name, with or without .url.") var job: String
}

struct Retry: JobControlCommand {
    static let configuration = CommandConfiguration(abstract: "Try a failed job again: move it back to the inbox.")
    static let action = SpoolControl.Action.retry
    @OptionGroup var options: ConfigOption
    @Argument(help: "The job file's name, with or without .url.") var job: String
}

func printError(_ message: String) {
    var standardError = StandardError()
    print(message, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandleStream.write(string, to: 2)
    }
}
