extension ConfigLoader {
    static let windowKeys = ["days", "time", "rate_limit", "concurrency", "classes", "pause"]
    static let quotaKeys = ["period", "bytes", "class", "running"]
    static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// The names a window or a quota may give as a class: the configured classes and `default`.
    static func knownClassNames(_ classes: [Config.JobClass]) -> [String] {
        ["default"] + classes.map(\.name).filter { $0 != "default" }
    }

    /// The `schedule` list, in file order; classes it names must be configured.
    static func schedule(_ field: ConfigField, classes: [Config.JobClass]) throws(ConfigError) -> [Config.ScheduleWindow] {
        var windows: [Config.ScheduleWindow] = []
        for item in try field.items() {
            windows.append(try window(item, classNames: knownClassNames(classes)))
        }
        return windows
    }

    static func window(_ field: ConfigField, classNames: [String]) throws(ConfigError) -> Config.ScheduleWindow {
        var window = Config.ScheduleWindow()
        var daysText = "daily"
        var timeText: String?
        for (key, field) in try field.entries(known: windowKeys) {
            switch key {
            case "days":
                daysText = try field.string()
                window.days = try days(field)
            case "time":
                timeText = try field.string()
                (window.start, window.end) = try timeRange(field)
            case "rate_limit": window.rateLimit = try field.size()
            case "concurrency": window.concurrency = try field.int(minimum: 1)
            case "classes": window.classes = try windowClasses(field, classNames: classNames)
            case "pause": window.pause = try pause(field)
            default: break
            }
        }
        guard let timeText else {
            throw field.error("a schedule window needs a time such as \"08:00-18:00\"")
        }
        window.label = "\(daysText) \(timeText)"
        return window
    }

    /// `Mon-Fri`, `Sat,Sun`, `Fri-Mon` (a range may wrap past Sunday), `daily`; names are case-insensitive.
    static func days(_ field: ConfigField) throws(ConfigError) -> Set<Int> {
        let text = try field.string()
        if text.lowercased() == "daily" { return Set(0...6) }
        func day(_ name: Substring) throws(ConfigError) -> Int {
            let trimmed = name.trimmingSpaces.lowercased()
            guard let index = dayNames.firstIndex(of: trimmed) else {
                throw field.error("unknown day '\(name.trimmingSpaces)'; expected Mon, Tue, Wed, Thu, Fri, Sat, Sun, ranges such as Mon-Fri, lists such as Sat,Sun, or daily")
            }
            return index
        }
        var days = Set<Int>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count <= 2 else { throw field.error("expected a day range such as Mon-Fri, got '\(part)'") }
            let first = try day(bounds[0])
            let last = bounds.count == 2 ? try day(bounds[1]) : first
            var current = first
            while true {
                days.insert(current)
                if current == last { break }
                current = (current + 1) % 7
            }
        }
        return days
    }

    /// `HH:MM-HH:MM`, 24-hour local time; the end may be `24:00`, and before the start (crossing midnight).
    static func timeRange(_ field: ConfigField) throws(ConfigError) -> (start: Int, end: Int) {
        let text = try field.string()
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw field.error("expected a time range such as \"08:00-18:00\", got '\(text)'")
        }
        func minutes(_ clock: Substring, allowsEndOfDay: Bool) throws(ConfigError) -> Int {
            let fields = clock.trimmingSpaces.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2, (1...2).contains(fields[0].count), fields[1].count == 2,
                  fields.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
                  let hour = Int(fields[0]), let minute = Int(fields[1]) else {
                throw field.error("expected a time such as 08:00, got '\(clock.trimmingSpaces)'")
            }
            if allowsEndOfDay, hour == 24, minute == 0 { return 1440 }
            guard hour < 24, minute < 60 else {
                throw field.error("there is no time \(clock.trimmingSpaces): hours go from 00 to 23 (24:00 only as an end), minutes from 00 to 59")
            }
            return hour * 60 + minute
        }
        let start = try minutes(parts[0], allowsEndOfDay: false)
        let end = try minutes(parts[1], allowsEndOfDay: true)
        guard start != end % 1440 || (start == 0 && end == 1440) else {
            throw field.error("'\(text)' starts and ends at the same time; write 00:00-24:00 for a whole day")
        }
        return (start, end)
    }

    /// A window's `classes`: class name → `rate_limit` and `max_active` inside it.
    static func windowClasses(_ field: ConfigField, classNames: [String]) throws(ConfigError) -> [String: Config.ScheduleWindow.ClassLimits] {
        guard case .mapping(let entries) = field.node.content else {
            if field.node.isNull { return [:] }
            throw field.error("expected a mapping of class names to rate_limit and max_active, got \(field.node.summary)")
        }
        var limits: [String: Config.ScheduleWindow.ClassLimits] = [:]
        for (name, classField) in try field.entries(known: entries.map(\.key)) {
            guard classNames.contains(name) else {
                let mark = entries.first { $0.key == name }?.keyMark
                throw classField.error("unknown class '\(name)'; the classes are \(classNames.joined(separator: ", "))", at: mark)
            }
            var classLimits = Config.ScheduleWindow.ClassLimits()
            for (key, value) in try classField.entries(known: ["rate_limit", "max_active"]) {
                switch key {
                case "rate_limit": classLimits.rateLimit = try value.size()
                case "max_active": classLimits.maxActive = try value.int(minimum: 1)
                default: break
                }
            }
            limits[name] = classLimits
        }
        return limits
    }

    /// `pause: true` (running transfers pause too), `pause: new` (they finish) or `pause: false`.
    static func pause(_ field: ConfigField) throws(ConfigError) -> Config.ScheduleWindow.Pause? {
        if case .scalar("new", isPlain: _) = field.node.content { return .new }
        guard (try? field.bool()) != nil else {
            throw field.error("expected true (running transfers pause too), new (they finish) or false, got \(field.node.summary)")
        }
        return try field.bool() ? .all : .off
    }

    /// The `quota` list; one quota per period and class.
    static func quotas(_ field: ConfigField, classes: [Config.JobClass]) throws(ConfigError) -> [Config.Quota] {
        let classNames = knownClassNames(classes)
        var quotas: [Config.Quota] = []
        for item in try field.items() {
            var period: Config.Quota.Period?
            var bytes: Int64?
            var className: String?
            var running = Config.Quota.Running.finish
            for (key, value) in try item.entries(known: quotaKeys) {
                switch key {
                case "period": period = try value.choice(Config.Quota.Period.allCases)
                case "bytes": bytes = try value.size(minimum: 1)
                case "class":
                    let name = try value.string()
                    guard classNames.contains(name) else {
                        throw value.error("unknown class '\(name)'; the classes are \(classNames.joined(separator: ", "))")
                    }
                    className = name
                case "running": running = try value.choice([Config.Quota.Running.finish, .pause])
                default: break
                }
            }
            guard let period else { throw item.error("a quota needs a period: daily, weekly or monthly") }
            guard let bytes else { throw item.error("a quota needs bytes, such as 10GB") }
            let quota = Config.Quota(period: period, bytes: bytes, className: className, running: running)
            if quotas.contains(where: { $0.period == period && $0.className == className }) {
                throw item.error("a \(quota.label) quota is already set")
            }
            quotas.append(quota)
        }
        return quotas
    }
}

extension Substring {
    /// Without leading and trailing spaces.
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
