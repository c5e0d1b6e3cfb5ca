/// Which `schedule:` windows are in force at an instant, the limits they set, and when that next
/// changes. Pure: computed from the clock each time, never remembered, so a restart, a reload, a
/// clock jump or a suspend lands in the state the clock says (docs/config.md "Schedules and quotas").
public struct ScheduleState: Equatable, Sendable {
    /// Indexes into the schedule of the windows in force, in file order.
    public var windows: [Int] = []
    /// The next instant (seconds since 1970 UTC) a window starts or ends; nil without windows.
    public var nextChange: Int64?
    /// `limits.rate_limit` in force, when a window sets it (0: none).
    public var rateLimit: Int64?
    /// `concurrency.total` in force, when a window sets it.
    public var concurrency: Int?
    /// Per class: its `rate_limit` and `max_active` in force, where a window sets them.
    public var classes: [String: Config.ScheduleWindow.ClassLimits] = [:]
    /// `.all` or `.new` while a pause is in force.
    public var pause: Config.ScheduleWindow.Pause?

    public init() {}

    /// How far ahead window boundaries are looked for: a window may start up to six days later.
    static let horizonDays = 8

    /// The state at `now` (seconds since 1970 UTC) in the calendar's local time. Each window
    /// starts on each of its days at its start time and lasts until its end time, on the next day
    /// when it crosses midnight; later windows override what earlier ones set.
    public init(at now: Int64, schedule: [Config.ScheduleWindow], calendar: LocalCalendar) {
        guard !schedule.isEmpty else { return }
        let today = calendar.localTime(now).date
        var next = Int64.max
        for (index, window) in schedule.enumerated() {
            var inForce = false
            for offset in -1...ScheduleState.horizonDays {
                let day = today.adding(days: offset)
                guard window.days.contains(day.weekday) else { continue }
                let start = calendar.instant(day, minute: window.start)
                let end = calendar.instant(window.crossesMidnight ? day.adding(days: 1) : day, minute: window.end)
                // A window the clocks skip entirely (02:00-03:00 on a spring-forward day) never starts.
                guard start < end else { continue }
                if start <= now, now < end { inForce = true }
                if start > now { next = min(next, start) }
                if end > now { next = min(next, end) }
            }
            if inForce { apply(window, index) }
        }
        nextChange = next == .max ? nil : next
        if pause == .off { pause = nil }
    }

    private mutating func apply(_ window: Config.ScheduleWindow, _ index: Int) {
        windows.append(index)
        if let rate = window.rateLimit { rateLimit = rate }
        if let total = window.concurrency { concurrency = total }
        for (name, limits) in window.classes {
            var merged = classes[name] ?? Config.ScheduleWindow.ClassLimits()
            if let rate = limits.rateLimit { merged.rateLimit = rate }
            if let active = limits.maxActive { merged.maxActive = active }
            classes[name] = merged
        }
        if let pause = window.pause { self.pause = pause }
    }

    /// `concurrency` and the classes' `max_active` in force.
    func admissionLimits(_ config: Config) -> Admission.Limits {
        var limits = Admission.Limits(config)
        if let concurrency { limits.total = concurrency }
        for (name, set) in classes {
            if let active = set.maxActive { limits.perClass[name] = active }
        }
        return limits
    }

    /// `limits.rate_limit` and the classes' `rate_limit` in force.
    func bandwidthLimits(_ config: Config) -> BandwidthBudget.Limits {
        var limits = BandwidthBudget.Limits(config)
        if let rateLimit { limits.total = max(0, rateLimit) }
        for (name, set) in classes {
            guard let rate = set.rateLimit else { continue }
            limits.perClass[name] = rate > 0 ? rate : nil
        }
        return limits
    }

    /// The windows in force as the config writes them (`Mon-Fri 08:00-18:00`), later ones last.
    public func labels(_ schedule: [Config.ScheduleWindow]) -> [String] {
        windows.compactMap { $0 < schedule.count ? schedule[$0].label : nil }
    }
}
