/// The bandwidth limits of docs/config.md as token buckets: every limited transfer has its own
/// bucket, filled at its max-min fair share (`FairShare`) of its own `max-download-limit`, its
/// class's `rate_limit` and the global `limits.rate_limit`. The write callback asks `admit` before
/// taking bytes; a transfer refused is paused, and `takeResumable` says when to resume it.
///
/// A bucket starts empty and holds at most an eighth of a second of its rate, so no transfer
/// bursts ahead at the start; it may run into debt by one write (libcurl's write cannot be cut),
/// which the refill pays back before the next. Once a second the shares are divided again from
/// what each transfer used: one that never had to wait asks only a little more than it used, and
/// the rest of a shared limit goes to the others. Pure bookkeeping: times are monotonic
/// milliseconds passed in.
struct BandwidthBudget {
    /// The shared limits, in bytes per second.
    struct Limits: Sendable, Equatable {
        /// `limits.rate_limit`: all transfers together; 0 means none.
        var total: Int64 = 0
        /// Class name → its `rate_limit`; classes without one are absent.
        var perClass: [String: Int64] = [:]

        init(total: Int64 = 0, perClass: [String: Int64] = [:]) {
            self.total = total
            self.perClass = perClass
        }

        init(_ config: Config) {
            total = max(0, config.limits.rateLimit)
            perClass = Dictionary(config.classes.compactMap { c in
                c.rateLimit.flatMap { $0 > 0 ? (c.name, $0) : nil }
            }) { first, _ in first }
        }
    }

    private struct Flow {
        let className: String
        let ownLimit: Int64?
        let since: Int64
        /// Fill rate of the bucket; nil when no limit applies.
        var rate: Double?
        /// The rate it would get by asking for more: the limit it runs under.
        var ceiling: Double?
        /// The rate it gets when every transfer wants all it can.
        var evenShare: Double?
        var demand = Double.infinity
        var tokens = 0.0
        var refilledAt: Int64
        /// Refused by `admit` and not resumed yet.
        var paused = false
        /// Had to wait during this window: it would take more than it is given.
        var throttled = false
        var windowBytes: Int64 = 0
        /// Under the global or a class limit, shared with others.
        var shared = false

        init(className: String, ownLimit: Int64?, now: Int64) {
            self.className = className
            self.ownLimit = ownLimit
            since = now
            refilledAt = now
        }

        mutating func refill(now: Int64) {
            if let rate, now > refilledAt {
                tokens = min(BandwidthBudget.burst(rate), tokens + rate * Double(now - refilledAt) / 1000)
            }
            refilledAt = max(refilledAt, now)
        }
    }

    /// How often the shares are divided again from measured use.
    static let window: Int64 = 1000
    /// A transfer that did not have to wait asks for this much more than it used…
    static let headroom = 1.25
    /// …plus this many bytes per second, so that a stalled one can start again.
    static let floor = 8192.0

    private(set) var limits = Limits()
    private var flows: [Int: Flow] = [:]
    private var windowStart: Int64 = 0
    /// Whether any transfer is limited or still paused: otherwise the budget needs no timer.
    private(set) var isActive = false

    /// Most a bucket holds: an eighth of a second, at least 2 KiB.
    static func burst(_ rate: Double) -> Double { max(rate / 8, 2048) }

    /// A paused transfer resumes once its bucket holds this much (a sixteenth of a second), so that
    /// one wake-up admits several writes at high rates and one at low rates.
    static func resumeLevel(_ rate: Double) -> Double { min(burst(rate), max(1, rate / 16)) }

    // MARK: - Membership and limits

    var ids: [Int] { Array(flows.keys) }
    var isEmpty: Bool { flows.isEmpty }

    func contains(_ id: Int) -> Bool { flows[id] != nil }

    /// A transfer starts; `rebalance` divides the limits again.
    mutating func add(_ id: Int, className: String, ownLimit: Int64?, now: Int64) {
        flows[id] = Flow(className: className, ownLimit: ownLimit.flatMap { $0 > 0 ? $0 : nil }, now: now)
    }

    /// A transfer ended; `rebalance` divides the limits again.
    mutating func remove(_ id: Int) {
        flows[id] = nil
    }

    /// New shared limits (a config reload); `rebalance` applies them.
    mutating func setLimits(_ limits: Limits) {
        self.limits = limits
    }

    /// Whether a limit applies to the transfer now: its write callback must ask `admit`.
    func isLimited(_ id: Int) -> Bool { flows[id]?.rate != nil }

    /// The limit the transfer runs under (what it would get by asking for more), bytes per second.
    func rateLimit(of id: Int) -> Int64? {
        flows[id]?.ceiling.map { Int64($0.rounded()) }
    }

    /// The share the transfer gets when every transfer wants all it can: the floor its speed
    /// should not fall below because of the limits alone.
    func evenShare(of id: Int) -> Int64? {
        flows[id]?.evenShare.map { Int64($0.rounded()) }
    }

    // MARK: - Division

    /// Divides the limits among the transfers now; with `measured`, each transfer's demand is
    /// first estimated from what it used since the last division.
    mutating func rebalance(now: Int64, measured: Bool = false) {
        let ids = flows.keys.sorted()
        let total = limits.total > 0 ? Double(limits.total) : nil
        let groups = limits.perClass.mapValues(Double.init)
        if measured {
            let elapsed = Double(max(1, now - windowStart))
            for id in ids {
                guard var flow = flows[id] else { continue }
                if !flow.shared || flow.throttled || flow.paused || now - flow.since < BandwidthBudget.window {
                    flow.demand = .infinity
                } else {
                    flow.demand = Double(flow.windowBytes) * 1000 / elapsed * BandwidthBudget.headroom + BandwidthBudget.floor
                }
                flow.windowBytes = 0
                flow.throttled = flow.paused
                flows[id] = flow
            }
            windowStart = now
        }
        var claims = ids.map { id in
            let flow = flows[id]!
            return FairShare.Claim(group: flow.className, cap: flow.ownLimit.map(Double.init), demand: flow.demand)
        }
        let rates = FairShare.divide(claims, total: total, groups: groups)
        let even = FairShare.evenShares(claims, total: total, groups: groups)
        var ceilings = rates
        for index in claims.indices where claims[index].demand.isFinite {
            let wanted = claims[index].demand
            claims[index].demand = .infinity
            ceilings[index] = FairShare.divide(claims, total: total, groups: groups)[index]
            claims[index].demand = wanted
        }
        let wasActive = isActive
        isActive = false
        for (index, id) in ids.enumerated() {
            guard var flow = flows[id] else { continue }
            flow.refill(now: now)
            if flow.rate == nil { flow.tokens = 0 }
            flow.rate = rates[index]
            flow.ceiling = ceilings[index]
            flow.evenShare = even[index]
            flow.shared = total != nil || groups[flow.className] != nil
            if let rate = flow.rate { flow.tokens = min(flow.tokens, BandwidthBudget.burst(rate)) }
            if flow.rate != nil || flow.paused { isActive = true }
            flows[id] = flow
        }
        // The first window starts with the first limit, not at some old division.
        if isActive, !wasActive { windowStart = now }
    }

    /// Divides the limits again from measured use once a window has passed; returns whether it did.
    @discardableResult
    mutating func rebalanceIfDue(now: Int64) -> Bool {
        guard isActive, now - windowStart >= BandwidthBudget.window else { return false }
        rebalance(now: now, measured: true)
        return true
    }

    // MARK: - Admission

    /// Whether a limited transfer may take `bytes` now (its bucket is not empty); they are charged
    /// if so. A refusal marks it paused: its write callback returns CURL_WRITEFUNC_PAUSE.
    mutating func admit(_ id: Int, bytes: Int, now: Int64) -> Bool {
        guard bytes > 0, var flow = flows[id], flow.rate != nil else { return true }
        flow.refill(now: now)
        let admitted = flow.tokens > 0
        if admitted {
            flow.tokens -= Double(bytes)
            flow.windowBytes += Int64(bytes)
        } else {
            flow.paused = true
            flow.throttled = true
        }
        flows[id] = flow
        return admitted
    }

    /// When the loop must wake next: the first paused transfer due to resume, or the next division.
    /// Nil when nothing is limited: no timer at all.
    func nextWake(now: Int64) -> Int64? {
        guard isActive else { return nil }
        var wake = windowStart + BandwidthBudget.window
        for flow in flows.values where flow.paused {
            guard let rate = flow.rate else { return now }
            guard rate > 0 else { continue }
            let missing = BandwidthBudget.resumeLevel(rate) - flow.tokens
            let wait = min(Double(BandwidthBudget.window), (max(0, missing) * 1000 / rate).rounded(.up))
            wake = min(wake, flow.refilledAt + Int64(wait))
        }
        return max(now, wake)
    }

    /// The paused transfers whose buckets have refilled (or that are no longer limited), marked
    /// running again: resume each (curl_easy_pause(3)).
    mutating func takeResumable(now: Int64) -> [Int] {
        var resumable: [Int] = []
        for id in flows.keys.sorted() {
            guard var flow = flows[id], flow.paused else { continue }
            flow.refill(now: now)
            if let rate = flow.rate, flow.tokens < BandwidthBudget.resumeLevel(rate) - 0.5 { continue }
            flow.paused = false
            flows[id] = flow
            resumable.append(id)
        }
        if !resumable.isEmpty, !flows.values.contains(where: { $0.rate != nil || $0.paused }) { isActive = false }
        return resumable
    }
}
