/// Whether one more connection may open: `concurrency.total`, `concurrency.per_host` across all
/// jobs and classes, and each class's `max_active`. A download takes one place when it starts and
/// one more for each extra segment (issue 26), so the limits count connections. Pure bookkeeping, no I/O.
struct Admission: Sendable, Equatable {
    struct Limits: Sendable, Equatable {
        var total: Int
        var perHost: Int
        /// Class name → `max_active`; classes without a limit are absent.
        var perClass: [String: Int]

        init(total: Int, perHost: Int, perClass: [String: Int] = [:]) {
            self.total = total
            self.perHost = perHost
            self.perClass = perClass
        }

        init(_ config: Config) {
            total = config.concurrency.total
            perHost = config.concurrency.perHost
            perClass = Dictionary(config.classes.compactMap { c in c.maxActive.map { (c.name, $0) } }) { a, _ in a }
        }
    }

    /// Replaced on a config reload; running downloads keep going even if now over a limit.
    var limits: Limits
    private(set) var active = 0
    private var perHost = HostCounts()
    private var perClass: [String: Int] = [:]
    /// The places of the class `default`, counted apart from `perClass`: most jobs run in it, and
    /// a class name hashed at every start and end cost more than the count.
    private var defaultClassActive = 0

    init(limits: Limits) { self.limits = limits }

    private func classActive(_ name: String) -> Int {
        name == "default" ? defaultClassActive : perClass[name, default: 0]
    }

    var hasRoom: Bool { active < limits.total }

    /// Which limit keeps a download from starting, so that the scheduler can set aside every
    /// download that limit holds back at once.
    enum Refusal: Sendable, Equatable {
        /// `concurrency.total`: nothing may start.
        case total
        /// `concurrency.per_host`: nothing of this host may start.
        case host
        /// The class's `max_active`: nothing of this class may start.
        case jobClass
    }

    func refusal(host: String, className: String) -> Refusal? {
        guard active < limits.total else { return .total }
        guard perHost[host] < limits.perHost else { return .host }
        if !limits.perClass.isEmpty, let cap = limits.perClass[className], classActive(className) >= cap { return .jobClass }
        return nil
    }

    func admits(host: String, className: String) -> Bool {
        refusal(host: host, className: className) == nil
    }

    /// How many more connections to `host` of class `className` may open now (extra segments of
    /// a running download: one that finds no room is simply not opened).
    func room(host: String, className: String) -> Int {
        var free = min(limits.total - active, limits.perHost - perHost[host])
        if let cap = limits.perClass[className] { free = min(free, cap - classActive(className)) }
        return max(0, free)
    }

    /// The limit leaving `host` and `className` the least room (`concurrency.per_host 2`), for a capped split's log line.
    func tightestLimit(host: String, className: String) -> String {
        var limits = [(room: self.limits.total - active, name: "concurrency.total \(self.limits.total)"),
                      (room: self.limits.perHost - perHost[host], name: "concurrency.per_host \(self.limits.perHost)")]
        if let cap = self.limits.perClass[className] {
            limits.append((room: cap - classActive(className), name: "class \(className) max_active \(cap)"))
        }
        return limits.min { $0.room < $1.room }?.name ?? "concurrency.total \(self.limits.total)"
    }

    mutating func started(host: String, className: String) {
        active += 1
        perHost.add(host)
        if className == "default" { defaultClassActive += 1 } else { perClass[className, default: 0] += 1 }
    }

    mutating func finished(host: String, className: String) {
        active = max(0, active - 1)
        perHost.remove(host)
        if className == "default" {
            defaultClassActive = max(0, defaultClassActive - 1)
        } else {
            Admission.release(className, in: &perClass)
        }
    }

    /// Places by host. The first host counted while none is (in a queue of one host's files, that
    /// host) is counted apart from the others: its count is asked at every start, end and refusal,
    /// and comparing two short names costs less than hashing one. A host is counted in one of the
    /// two, never both.
    private struct HostCounts: Sendable, Equatable {
        private var hot: String?
        private var hotCount = 0
        private var others: [String: Int] = [:]

        subscript(host: String) -> Int {
            if let hot, hot == host { return hotCount }
            return others.isEmpty ? 0 : others[host, default: 0]
        }

        mutating func add(_ host: String) {
            if let hot, hot == host {
                hotCount += 1
            } else if hot == nil, others.isEmpty || others[host] == nil {
                (hot, hotCount) = (host, 1)
            } else {
                others[host, default: 0] += 1
            }
        }

        mutating func remove(_ host: String) {
            if let hot, hot == host {
                hotCount -= 1
                if hotCount <= 0 { (self.hot, hotCount) = (nil, 0) }
            } else if !others.isEmpty {
                Admission.release(host, in: &others)
            }
        }

        mutating func removeAll() {
            (hot, hotCount) = (nil, 0)
            others.removeAll()
        }
    }

    /// One place fewer under `name`; a count that reaches 0 is removed (one lookup of the name).
    private static func release(_ name: String, in counts: inout [String: Int]) {
        guard let index = counts.index(forKey: name) else { return }
        if counts.values[index] > 1 { counts.values[index] -= 1 } else { counts.remove(at: index) }
    }

    func active(inClass name: String) -> Int { classActive(name) }

    mutating func reset() {
        active = 0
        perHost.removeAll()
        perClass.removeAll()
        defaultClassActive = 0
    }
}
