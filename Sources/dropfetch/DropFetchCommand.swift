import ArgumentParser
import DropFetch
import Logging

/// `dropfetch`: the command-line face of the agent; every subcommand parses and calls the library.
struct DropFetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dropfetch",
        abstract: "A watch-folder download agent: drop .url files into an inbox, get verified files.",
        version: DropFetchVersion.string,
        subcommands: [Run.self, Check.self, Add.self])
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

func printError(_ message: String) {
    var standardError = StandardError()
    print(message, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandleStream.write(string, to: 2)
    }
}
