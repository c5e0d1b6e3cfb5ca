/// What `status`, `status --json`, the status page and the metrics file say about `schedule:` and
/// `quota:`: the windows in force, the limits they make, the next change and each quota's use,
/// computed from the config, the wall clock and every agent's quota ledger file the way the agent
/// computes them (`ScheduleState`, `QuotaUsage`), so it needs no running agent.
public struct ScheduleStatus: Sendable {
    /// Seconds since 1970 UTC the state was computed for.
    public var now: Int64
    /// The config's windows; empty without `schedule:`.
    public var schedule: [Config.ScheduleWindow]
    public var state: ScheduleState
    /// One per `quota:` entry, in file order.
    public var quotas: [QuotaUsage]
    /// `limits.rate_limit` in force in bytes per second (0: none).
    public var rateLimit: Int64
    /// `concurrency.total` in force.
    public var concurrency: Int

    /// The state at `now` from ledger `counts`; nil when the config has neither `schedule:` nor `quota:`.
    public init?(config: Config, counts: [QuotaUsage.Key: Int64], now: Int64, calendar: LocalCalendar) {
        guard !config.schedule.isEmpty || !config.quotas.isEmpty else { return nil }
        self.init(config: config, state: ScheduleState(at: now, schedule: config.schedule, calendar: calendar),
                  quotas: QuotaUsage.usages(config.quotas, counts: counts, now: now, calendar: calendar), now: now)
    }

    /// From a state and quota uses already computed (the agent's `ScheduleGate`).
    init(config: Config, state: ScheduleState, quotas: [QuotaUsage], now: Int64) {
        self.now = now
        schedule = config.schedule
        self.state = state
        self.quotas = quotas
        rateLimit = state.bandwidthLimits(config).total
        concurrency = state.admissionLimits(config).total
    }

    /// The state now, reading every ledger file in `<spool>/quota` (for `status`, without an agent).
    public static func read(config: Config, now: Int64) -> ScheduleStatus? {
        guard !config.schedule.isEmpty || !config.quotas.isEmpty else { return nil }
        let counts = config.quotas.isEmpty ? [:] : QuotaLedger.readAll(spoolRoot: Agent.absolute(config.spool),
                                                                                bound: QuotaBound(config: config), now: now)
        return ScheduleStatus(config: config, counts: counts, now: now, calendar: LocalCalendar())
    }

    /// `off`, `all` (`pause: true`) or `new` (`pause: new`).
    public var pause: String { (state.pause ?? .off).rawValue }

    /// The windows in force as the config writes them (`Mon-Fri 08:00-18:00`), later ones last.
    public var windowsInForce: [String] { state.labels(schedule) }

    /// `status --json`'s `schedule` and `quotas` members, to follow the object's others after a comma.
    func jsonMembers() -> String {
        var json = JSONText()
        json.beginObject()
        writeJSON(&json)
        json.endObject()
        var text = String(decoding: json.bytes, as: UTF8.self)
        text.removeFirst(2)
        text.removeLast(2)
        return text
    }

    /// `schedule` (with `schedule:`) and `quotas` (with `quota:`) as members of the open object.
    func writeJSON(_ json: inout JSONText) {
        if !schedule.isEmpty {
            json.beginObject("schedule")
            json.beginArray("windows_in_force")
            for label in windowsInForce { json.element(label) }
            json.endArray()
            json.beginObject("limits")
            json.field("rate_limit", rateLimit)
            json.field("concurrency", concurrency)
            json.field("pause", pause)
            json.beginObject("classes")
            for (name, limits) in state.classes.sorted(by: { $0.key < $1.key }) {
                json.beginObject(named: name)
                json.field("rate_limit", limits.rateLimit)
                json.field("max_active", limits.maxActive)
                json.endObject()
            }
            json.endObject()
            json.endObject()
            json.field("next_change", state.nextChange.map { Timestamp.format(seconds: $0) })
            json.endObject()
        }
        if !quotas.isEmpty {
            json.beginArray("quotas")
            for usage in quotas {
                json.beginObject()
                json.field("period", usage.quota.period.rawValue)
                json.field("class", usage.quota.className)
                json.field("bytes", usage.quota.bytes)
                json.field("used", usage.used)
                json.field("left", usage.left)
                json.field("resets", Timestamp.format(seconds: usage.reset))
                json.endObject()
            }
            json.endArray()
        }
    }

    /// Label and value pairs for `status` and the status page: the schedule, then each quota.
    public var facts: [(label: String, value: String)] {
        var facts: [(label: String, value: String)] = []
        if !schedule.isEmpty {
            facts.append(("window in force", windowsInForce.isEmpty ? "none (the config's own limits)" : windowsInForce.joined(separator: "; ")))
            var limits = ["rate limit " + (rateLimit > 0 ? HumanUnits.rate(rateLimit) : "none"), "concurrency \(concurrency)"]
            for (name, set) in state.classes.sorted(by: { $0.key < $1.key }) {
                if let rate = set.rateLimit { limits.append("class \(name) rate limit " + (rate > 0 ? HumanUnits.rate(rate) : "none")) }
                if let active = set.maxActive { limits.append("class \(name) max active \(active)") }
            }
            if let pause = state.pause { limits.append(pause == .all ? "paused" : "paused (new transfers)") }
            facts.append(("limits", limits.joined(separator: ", ")))
            facts.append(("next change", state.nextChange.map { when($0) } ?? "none"))
        }
        for usage in quotas {
            facts.append(("quota " + usage.quota.label,
                          "\(HumanUnits.bytes(usage.used)) used of \(HumanUnits.bytes(usage.quota.bytes)), "
                              + "\(HumanUnits.bytes(usage.left)) left" + (usage.isReached ? " (reached)" : "")
                              + ", resets " + when(usage.reset)))
        }
        return facts
    }

    /// `2027-06-11T00:00:00+02:00`: local time, as the windows are written, and absolute, so that
    /// a page written while the agent idles does not go stale (issue 36).
    private func when(_ instant: Int64) -> String {
        Timestamp.local(seconds: instant)
    }
}
