extension ConfigLoader {
    static let classKeys = ["name", "match", "priority", "max_active", "destination", "rate_limit", "retry", "split"] + networkKeys

    /// The `classes` list, in order (first match wins); names must be unique.
    static func jobClasses(_ field: ConfigField, retry: Config.Retry, network: Config.Network = Config.Network(),
                           split: Config.Split = Config.Split()) throws(ConfigError) -> [Config.JobClass] {
        var classes: [Config.JobClass] = []
        var firstLines: [String: Int] = [:]
        for item in try field.items() {
            let (jobClass, nameField) = try jobClass(item, retry: retry, network: network, split: split)
            if let line = firstLines[jobClass.name] {
                throw nameField.error("class '\(jobClass.name)' is already defined at line \(line)")
            }
            firstLines[jobClass.name] = nameField.node.mark.line
            classes.append(jobClass)
        }
        return classes
    }

    /// One class; its `retry`, `split` and network keys fall back to the top level's. Returns the `name` field for errors.
    static func jobClass(
        _ field: ConfigField, retry: Config.Retry, network: Config.Network = Config.Network(),
        split: Config.Split = Config.Split()
    ) throws(ConfigError) -> (Config.JobClass, nameField: ConfigField) {
        var jobClass = Config.JobClass(name: "")
        var nameField: ConfigField?
        for (key, field) in try field.entries(known: classKeys) {
            switch key {
            case "name":
                jobClass.name = try className(field)
                nameField = field
            case "match": jobClass.match = try classMatch(field)
            case "priority": jobClass.priority = try field.int()
            case "max_active": jobClass.maxActive = try field.int(minimum: 1)
            case "destination": jobClass.destination = try field.optionalFilePath()
            case "rate_limit":
                // 0 means the class has no limit of its own, as for the top-level rate_limit.
                let limit = try field.size()
                jobClass.rateLimit = limit == 0 ? nil : limit
            case "retry": jobClass.retry = try self.retry(field, inheriting: retry)
            case "split": jobClass.split = try self.split(field, inheriting: split)
            case _ where networkKeys.contains(key):
                var own = jobClass.network ?? network
                try self.network(key, field, into: &own)
                jobClass.network = own
            default: break
            }
        }
        guard let nameField else { throw field.error("a class needs a name") }
        return (jobClass, nameField)
    }

    /// A class name as a job file writes it in `class=NAME`: no whitespace or control characters.
    static func className(_ field: ConfigField) throws(ConfigError) -> String {
        let name = try field.string()
        let refused = name.unicodeScalars.contains {
            $0.properties.isWhitespace || $0.properties.generalCategory == .control
        }
        guard !refused else { throw field.error("a class name cannot contain spaces or control characters") }
        return name
    }

    static func classMatch(_ field: ConfigField) throws(ConfigError) -> Config.ClassMatch {
        var match = Config.ClassMatch()
        for (key, field) in try field.entries(known: ["folder", "url", "host"]) {
            switch key {
            case "folder": match.folder = try inboxFolder(field)
            case "url": match.url = try field.string()
            case "host": match.host = try field.string()
            default: break
            }
        }
        return match
    }

    /// A routing folder below `inbox/` such as `urgent` or `team/a`; trailing slashes are dropped.
    static func inboxFolder(_ field: ConfigField) throws(ConfigError) -> String {
        let text = try field.string()
        var folder = Substring(text)
        while folder.count > 1, folder.hasSuffix("/") { folder = folder.dropLast() }
        guard !folder.hasPrefix("/") else {
            throw field.error("expected a folder inside inbox/ like 'urgent', got the absolute path '\(text)'")
        }
        for component in folder.split(separator: "/", omittingEmptySubsequences: false) {
            if component.isEmpty || component == "." || component == ".." {
                throw field.error("expected a folder inside inbox/ like 'urgent', got '\(text)'")
            }
            if component.hasPrefix(".") {
                throw field.error("'\(text)' can never match: dropfetch ignores names starting with '.'")
            }
        }
        return String(folder)
    }
}
