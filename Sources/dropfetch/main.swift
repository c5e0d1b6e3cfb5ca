import ArgumentParser
import DropFetch

SpoolInspection.prepareProcessSignals()
do {
    var command = try DropFetchCommand.parseAsRoot()
    try command.run()
} catch {
    // DESIGN.md §5: usage errors exit 2 (swift-argument-parser would use 64).
    let code = DropFetchCommand.exitCode(for: error)
    if code == .validationFailure {
        printError(DropFetchCommand.fullMessage(for: error))
        DropFetchCommand.exit(withError: ExitCode(2))
    }
    DropFetchCommand.exit(withError: error)
}
