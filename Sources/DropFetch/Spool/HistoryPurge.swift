import Glibc

/// `dropfetch purge`: finished jobs removed now by a person's rule (`--older-than`, `--keep-jobs`),
/// else the config's `history:` (HistoryRetention), with or without a running agent.
public enum HistoryPurge {
    /// What a purge found and did.
    public struct Report: Sendable, Equatable {
        /// Finished jobs the rule selects (with `dryRun`: would remove).
        public var selected: Int
        /// Finished jobs this purge removed (0 with `dryRun`; fewer than `selected` when another
        /// agent removed some first).
        public var removed: Int
        /// Finished jobs left in done/ and failed/.
        public var kept: Int
        /// Status files that could not be read (kept).
        public var unreadable: Int
        public var dryRun: Bool

        /// `{"dry_run": …, "selected": …, "removed": …, "kept": …, "unreadable": …}`.
        public func json() -> String {
            "{\"dry_run\": \(dryRun), \"selected\": \(selected), \"removed\": \(removed), \"kept\": \(kept), "
                + "\"unreadable\": \(unreadable)}"
        }

        /// One line for people.
        public func text() -> String {
            var line = dryRun ? "would remove \(selected) finished jobs" : "removed \(removed) finished jobs"
            line += " from done/ and failed/; \(kept) kept"
            if unreadable > 0 { line += "; \(unreadable) unreadable status files kept" }
            return line
        }
    }

    /// Why nothing was purged.
    public enum Refusal: Error, Sendable, CustomStringConvertible {
        /// No option and no `history:` in the config.
        case noRule
        case unusable(SystemError)

        public var description: String {
            switch self {
            case .noRule:
                return "nothing to purge by: give --older-than or --keep-jobs, or set history: keep or max_jobs in the config"
            case .unusable(let error): return "\(error)"
            }
        }
    }

    /// The rule of the options, else of the config; nil when neither gives one.
    public static func rule(olderThan: Duration?, keepJobs: Int?, config: Config) -> Config.History? {
        if olderThan != nil || keepJobs != nil { return Config.History(keep: olderThan, maxJobs: keepJobs) }
        guard let history = config.history, history.removesAnything else { return nil }
        return history
    }

    /// Selects under `rule` and, unless `dryRun`, removes.
    public static func run(config: Config, rule: Config.History?, dryRun: Bool) throws(Refusal) -> Report {
        guard let rule, rule.removesAnything else { throw .noRule }
        let retention = HistoryRetention(spoolRoot: Agent.absolute(config.spool))
        let selection: HistoryRetention.Selection
        do {
            selection = try retention.select(rule, now: Int64(time(nil)))
        } catch {
            throw .unusable(error)
        }
        var report = Report(selected: selection.jobs.count, removed: 0, kept: selection.kept,
                            unreadable: selection.unreadable, dryRun: dryRun)
        guard !dryRun else { return report }
        let removal = retention.remove(selection)
        if let error = removal.error { throw .unusable(error) }
        report.removed = removal.removed
        return report
    }
}
