/// Whether one more download may start: `concurrency.total`, `concurrency.per_host` across all
/// jobs and classes, and each class's `max_active`. Pure bookkeeping, no I/O.
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
    private var perHost: [String: Int] = [:]
    private var perClass: [String: Int] = [:]

    init(limits: Limits) { self.limits = limits }

    var hasRoom: Bool { active < limits.total }

    func admits(host: String, className: String) -> Bool {
        guard active < limits.total, perHost[host, default: 0] < limits.perHost else { return false }
        if let cap = limits.perClass[className], perClass[className, default: 0] >= cap { return false }
        return true
    }

    mutating func started(host: String, className: String) {
        active += 1
        perHost[host, default: 0] += 1
        perClass[className, default: 0] += 1
    }

    mutating func finished(host: String, className: String) {
        active = max(0, active - 1)
        perHost[host, default: 1] -= 1
        if perHost[host] == 0 { perHost[host] = nil }
        perClass[className, default: 1] -= 1
        if perClass[className] == 0 { perClass[className] = nil }
    }

    func active(inClass name: String) -> Int { perClass[name, default: 0] }

    mutating func reset() {
        active = 0
        perHost.removeAll()
        perClass.removeAll()
    }
}
