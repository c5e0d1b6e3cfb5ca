import ArgumentParser
import DropFetch
import Glibc

/// The `--config` option every command takes, and where the config comes from without it.
struct ConfigOption: ParsableArguments {
    /// The config file used when neither `--config` nor `$DROPFETCH_CONFIG` names one, if it exists.
    static let systemPath = "/etc/dropfetch/config.yaml"

    @Option(name: .long, help: ArgumentHelp(
        "The YAML config file.",
        discussion: "Without it: $DROPFETCH_CONFIG, then \(ConfigOption.systemPath) if it exists, "
            + "then the built-in defaults (spool ./spool).",
        valueName: "file"))
    var config: String?

    /// The file in force: `--config`, `$DROPFETCH_CONFIG`, then `/etc/dropfetch/config.yaml` when
    /// it exists (or cannot even be looked at: loading it then says why); nil for the built-in defaults.
    var path: String? {
        if let config { return config }
        if let variable = getenv("DROPFETCH_CONFIG"), variable.pointee != 0 { return String(cString: variable) }
        var info = stat()
        if lstat(ConfigOption.systemPath, &info) == 0 || errno != ENOENT { return ConfigOption.systemPath }
        return nil
    }

    /// Where the config came from, for messages: the path, or "built-in defaults".
    var origin: String { path ?? "built-in defaults" }

    /// Loads the config or exits 2 with the file, line and column of the problem.
    func load() throws -> Config {
        guard let path else { return Config() }
        do {
            return try ConfigLoader.load(path: path)
        } catch {
            for each in error.all { printError("dropfetch: \(each)") }
            throw ExitCode(2)
        }
    }

    /// Loads the config for a command that works on an existing spool (`status`, `hold`, …): one
    /// that is not there is an error (exit 3), never created.
    func loadForExistingSpool() throws -> Config {
        let config = try load()
        do {
            try SpoolInspection.requireSpool(config: config)
        } catch {
            printError("dropfetch: \(error) (config: \(origin))")
            throw ExitCode(3)
        }
        return config
    }
}
