import DropFetch

/// Prints a message that is not a log event (a config error at start, a command's failure) to
/// stderr in one write(2); under the journal every line carries the sd-daemon(3) priority prefix
/// (`<3>`, error, unless told otherwise), as log lines do.
func printError(_ message: String, priority: JournalStream.Priority = .error) {
    let prefix = LogSetup.journal ? priority.prefix : ""
    let lines = message.split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 }
    FileHandleStream.write(lines.joined(separator: "\n") + "\n", to: 2)
}
