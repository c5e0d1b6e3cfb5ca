import ArgumentParser
import DropFetch
import Logging

/// `dropfetch`: the command-line face of the agent; every subcommand parses and calls the library.
struct DropFetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dropfetch",
        abstract: "A watch-folder download agent: drop .url files into an inbox, get verified files.",
        discussion: """
            People and programs drop .url job files (an Internet Shortcut, or a list of URLs with \
            aria2-style options) into <spool>/inbox/. The agent (dropfetch run) claims each job into \
            work/<agent>/, downloads it with libcurl, resuming partial data only after the server \
            proves it is the same file, and files the job in done/ or failed/ beside a \
            <name>.status.json that says what happened. hold/ keeps paused jobs.

            Every command reads its config from --config, else $DROPFETCH_CONFIG, else \
            \(ConfigOption.systemPath) if it exists, else built-in defaults (spool ./spool, \
            destination <spool>/downloads). Commands that work on a spool (status, hold, release, purge, \
            cancel, retry) never create one: on a spool that does not exist they exit 3; add makes \
            one as run would when its parent folder exists.

            Exit status: 0 success; 1 a job failed (run --once) or no such job (control commands); \
            2 config or usage error, or check found a problem; 3 the spool cannot be used or does not \
            exist; 75 run --once left jobs waiting (a later retry, a pause window, a reached quota). \
            The config keys are in dropfetch.yaml(5).

            The reference (job files, status fields, config keys, architecture) is in docs/ of the \
            source tree, installed under share/doc/dropfetch/.
            """,
        version: DropFetchVersion.string,
        subcommands: [Run.self, Check.self, Status.self, Add.self, Hold.self, Release.self, Cancel.self, Retry.self, Purge.self,
                      ConfigManual.self])
}
