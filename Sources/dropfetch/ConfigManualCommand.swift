import ArgumentParser
import DropFetch

/// `dropfetch config-manual` (hidden): prints dropfetch.yaml(5), for `make man`.
struct ConfigManual: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config-manual",
        abstract: "Print the dropfetch.yaml(5) man page (mdoc), from the table of config keys.",
        shouldDisplay: false)

    @Option(help: "The page's date, as mdoc's .Dd takes it.") var date: String

    func run() {
        print(ConfigManPage.render(date: date), terminator: "")
    }
}
