extension ConfigLoader {
    static let historyKeys = ["keep", "max_jobs"]

    /// `history: {keep, max_jobs}` (docs/config.md); each value located on error.
    static func history(_ field: ConfigField) throws(ConfigError) -> Config.History {
        var history = Config.History()
        for (key, field) in try field.entries(known: historyKeys) {
            switch key {
            case "keep":
                guard let text = field.node.text, let keep = Config.History.duration(text) else {
                    throw field.error("expected a duration such as 30d (an integer with s, m, h or d, at most 100 years), got \(field.node.summary)")
                }
                history.keep = keep
            case "max_jobs": history.maxJobs = try field.int(minimum: 0)
            default: break
            }
        }
        return history
    }
}
