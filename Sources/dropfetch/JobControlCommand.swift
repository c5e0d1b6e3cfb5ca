import ArgumentParser
import DropFetch

/// hold, release, cancel and retry: one job moved between the spool folders.
protocol JobControlCommand: ParsableCommand {
    static var action: SpoolControl.Action { get }
    var options: ConfigOption { get }
    var job: String { get }
}

extension JobControlCommand {
    /// The exit status paragraph every control command's manual page ends with.
    static var exitStatus: String {
        "Exit status: 0 done (the new path is printed), 1 no such job or an ambiguous name, 2 config or "
            + "usage error, 3 the spool does not exist (nothing is created)."
    }

    func run() throws {
        let config = try options.loadForExistingSpool()
        do {
            print(try SpoolControl.perform(Self.action, job: job, config: config))
        } catch let error as SpoolInspection.MissingSpool {
            printError("dropfetch: \(error) (config: \(options.origin))")
            throw ExitCode(3)
        } catch {
            printError("dropfetch: \(error)")
            throw ExitCode(1)
        }
    }
}

struct Hold: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause a job: move it to hold/ (its partial data is kept).",
        discussion: "A running agent stops the job's transfers at once and keeps the .part file. " + exitStatus)
    static let action = SpoolControl.Action.hold
    @OptionGroup var options: ConfigOption
    @Argument(help: JobNameArgument.help, completion: JobNameArgument.completion(.hold)) var job: String
}

struct Release: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resume a held job: move it from hold/ to the inbox.",
        discussion: "It keeps its arrival time, attempts and partial data, and resumes with a range request; "
            + "a retry time it had is dropped, so it is due at once. "
            + exitStatus)
    static let action = SpoolControl.Action.release
    @OptionGroup var options: ConfigOption
    @Argument(help: JobNameArgument.help, completion: JobNameArgument.completion(.release)) var job: String
}

struct Cancel: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a job: remove its partial data and file it in failed/ as cancelled.",
        discussion: "Works on a job in the inbox, claimed by an agent or held. " + exitStatus)
    static let action = SpoolControl.Action.cancel
    @OptionGroup var options: ConfigOption
    @Argument(help: JobNameArgument.help, completion: JobNameArgument.completion(.cancel)) var job: String
}

struct Retry: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Try a failed job again, or a waiting job now: move it back to the inbox.",
        discussion: "A failed job's partial data, if any, is resumed. A claimed job that waits for a retry "
            + "(state waiting) goes back to the inbox with its attempts and partial data and is due at once. "
            + exitStatus)
    static let action = SpoolControl.Action.retry
    @OptionGroup var options: ConfigOption
    @Argument(help: JobNameArgument.help, completion: JobNameArgument.completion(.retry)) var job: String
}

/// The JOB argument of the control commands: its help, and its completion, which calls back into
/// `dropfetch` to list the job names the command could act on (bash, zsh and fish).
enum JobNameArgument {
    static let help = ArgumentHelp(
        "The job: its name as add printed it or status shows it, with or without .url, or a unique prefix.",
        valueName: "job")

    static func completion(_ action: SpoolControl.Action) -> CompletionKind {
        .custom { words, _, _ in
            var arguments: [String] = []
            if let index = words.firstIndex(of: "--config"), index + 1 < words.count {
                arguments = ["--config", words[index + 1]]
            } else if let joined = words.first(where: { $0.hasPrefix("--config=") }) {
                arguments = [joined]
            }
            guard let options = try? ConfigOption.parse(arguments) else { return [] }
            var config = Config()
            if let path = options.path {
                guard let loaded = try? ConfigLoader.load(path: path) else { return [] }
                config = loaded
            }
            return SpoolControl.candidates(for: action, config: config)
        }
    }
}
