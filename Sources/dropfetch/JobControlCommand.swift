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
    @Argument(help: "The job file's name, with or without .url.") var job: String
}

struct Release: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resume a held job: move it from hold/ to the inbox.",
        discussion: "It keeps its arrival time, attempts and partial data, and resumes with a range request. "
            + exitStatus)
    static let action = SpoolControl.Action.release
    @OptionGroup var options: ConfigOption
    @Argument(help: "The job file's name, with or without .url.") var job: String
}

struct Cancel: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a job: remove its partial data and file it in failed/ as cancelled.",
        discussion: "Works on a job in the inbox, claimed by an agent or held. " + exitStatus)
    static let action = SpoolControl.Action.cancel
    @OptionGroup var options: ConfigOption
    @Argument(help: "The job file's name, with or without .url.") var job: String
}

struct Retry: JobControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Try a failed job again: move it back to the inbox.",
        discussion: "Its partial data, if any, is resumed. " + exitStatus)
    static let action = SpoolControl.Action.retry
    @OptionGroup var options: ConfigOption
    @Argument(help: "The job file's name, with or without .url.") var job: String
}
