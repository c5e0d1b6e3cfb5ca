import ArgumentParser
import DropFetch

/// `dropfetch add`: one job per URL (or one job with mirrors), checked as `run` would check it,
/// written into the inbox under a short name that is printed.
struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write jobs into the inbox, atomically, and print their names.",
        discussion: """
            Each URL becomes a job of its own, named after the URL's file name (file.iso.url, or \
            file.iso.1.url when a job of that name is in the spool already); with --mirrors the URLs \
            are mirrors of one file, tried in order. The name printed (one line per job) is what \
            hold, release, cancel and retry take, with or without .url. Before anything is written \
            the job is checked as run would check it: the URL's scheme against the config's \
            protocols, --class against its classes, and the options as a job file's. Exit status: \
            0 written, 2 a usage error or a job run would refuse (nothing written), 3 the spool \
            cannot be written, or does not exist and cannot be made (its parent folder is missing). \
            A spool that does not exist yet is made as run makes it, so jobs can be added before \
            the agent first runs.
            """)

    @OptionGroup var options: ConfigOption
    @Argument(help: "The URLs to fetch: one job each, or mirrors of one file with --mirrors.")
    var urls: [String]
    @Flag(help: "The URLs are mirrors of one file: one job, tried in order.") var mirrors = false
    @Option(help: "Priority: higher runs first.") var priority: Int?
    @Option(name: .customLong("class"), help: "A class name from the config.") var className: String?
    @Option(help: "The file name to save as (one URL, or --mirrors).") var out: String?
    @Option(help: "A subfolder of the destination to save into.") var dir: String?
    @Option(help: ArgumentHelp("The expected digest: sha-256=HEX, sha-512=HEX or md5=HEX.", valueName: "algo=hex"))
    var checksum: String?
    @Option(help: ArgumentHelp("A request header 'Name: value', sent only to the job's own URLs (repeatable).",
                               valueName: "header"))
    var header: [String] = []
    @Option(help: ArgumentHelp("The download's rate limit, e.g. 500K or 2M.", valueName: "rate")) var limit: String?

    func validate() throws {
        if urls.isEmpty { throw ValidationError("give at least one URL") }
        if out != nil, urls.count > 1, !mirrors {
            throw ValidationError("--out names one file: give one URL, or --mirrors to make the URLs mirrors of it")
        }
    }

    func run() throws {
        let config = try options.load()
        let groups = mirrors ? [urls] : urls.map { [$0] }
        var submissions: [JobSubmission] = []
        do {
            for group in groups {
                submissions.append(try JobSubmission(
                    JobSubmission.Request(urls: group, priority: priority, className: className, out: out, dir: dir,
                                          checksum: checksum, headers: header, limit: limit),
                    config: config))
            }
        } catch {
            printError("dropfetch: add: \(error)")
            throw ExitCode(2)
        }
        for submission in submissions {
            do {
                print(try submission.write(config: config))
            } catch let error as SpoolInspection.UncreatableSpool {
                printError("dropfetch: add: \(error) (config: \(options.origin))")
                throw ExitCode(3)
            } catch {
                printError("dropfetch: add: cannot write the job: \(error)")
                throw ExitCode(3)
            }
        }
    }
}
