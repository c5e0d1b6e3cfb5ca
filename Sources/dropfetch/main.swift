import ArgumentParser
import DropFetch

SpoolInspection.prepareProcessSignals()
do {
    var command = try DropFetchCommand.parseAsRoot()
    try command.run()
} catch {
    let code = DropFetchCommand.exitCode(for: error)
    // An ExitCode's message is already printed; help, version and completion scripts go to stdout.
    if error is ExitCode || code == .success { DropFetchCommand.exit(withError: error) }
    // Everything else reaches stderr through printError, so the journal gets a priority for it.
    let message = DropFetchCommand.fullMessage(for: error)
    if !message.isEmpty { printError(message) }
    // Usage errors exit 2 (docs/cli.md), not swift-argument-parser's 64.
    DropFetchCommand.exit(withError: ExitCode(code == .validationFailure ? 2 : code.rawValue))
}
