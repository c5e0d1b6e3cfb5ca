@testable import DropFetch
import Testing

@Suite("Scheduler")
struct SchedulerTests {
    private func entry(_ job: Int, priority: Int = 0, arrival: Int? = nil, host: String = "a") -> Scheduler.Entry {
        Scheduler.Entry(unit: .init(job: job, download: 0), priority: priority, arrival: arrival ?? job, host: host)
    }

    private func drain(_ scheduler: inout Scheduler, now: Int64 = 0) -> [Int] {
        var order: [Int] = []
        while let next = scheduler.nextRunnable(now: now, canStart: { _ in true }) { order.append(next.unit.job) }
        return order
    }

    @Test("higher priority first, then arrival order (fifo)")
    func priorityThenFIFO() {
        var scheduler = Scheduler(order: .fifo)
        for (job, priority) in [(0, 0), (1, 10), (2, 0), (3, 10), (4, -5)] {
            scheduler.enqueue(entry(job, priority: priority))
        }
        #expect(drain(&scheduler) == [1, 3, 0, 2, 4])
    }

    @Test("lifo reverses arrival order among equal priority")
    func lifo() {
        var scheduler = Scheduler(order: .lifo)
        for job in 0..<4 { scheduler.enqueue(entry(job)) }
        scheduler.enqueue(entry(9, priority: 1))
        #expect(drain(&scheduler) == [9, 3, 2, 1, 0])
    }

    @Test("a unit that cannot start does not block the ones behind it")
    func noHeadOfLineBlocking() {
        var scheduler = Scheduler()
        scheduler.enqueue(entry(0, host: "busy"))
        scheduler.enqueue(entry(1, host: "free"))
        let next = scheduler.nextRunnable(now: 0) { $0.host != "busy" }
        #expect(next?.unit.job == 1)
        #expect(scheduler.readyCount == 1)
    }

    @Test("a waiting unit comes back when due and keeps its place")
    func waitingKeepsPlace() {
        var scheduler = Scheduler()
        scheduler.enqueue(entry(0), due: 1_000)
        scheduler.enqueue(entry(1))
        scheduler.enqueue(entry(2))
        #expect(scheduler.nextDue == 1_000)
        #expect(scheduler.nextRunnable(now: 999) { _ in true }?.unit.job == 1)
        #expect(drain(&scheduler, now: 1_000) == [0, 2])
        #expect(scheduler.isEmpty)
    }

    @Test("a failed spool step (claim, filing) waits from its initial delay, doubling, never past a minute")
    func spoolStepBackoff() {
        let claims = (1...9).map { Backoff.spoolStep(failures: $0, initial: .seconds(1)).milliseconds }
        #expect(claims == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000])
        #expect(Backoff.spoolStep(failures: 1, initial: .milliseconds(500)).milliseconds == 500)
        #expect(Backoff.spoolStep(failures: 50, initial: .milliseconds(500)).milliseconds == 60_000)
    }

    @Test("backoff grows exponentially within [50%, 100%] of the step, capped, and honours Retry-After")
    func backoffBounds() {
        var policy = Config.Retry()
        policy.initialDelay = .seconds(10)
        policy.maxDelay = .seconds(60)
        for attempt in 1...8 {
            let step = min(60_000, 10_000 << (attempt - 1))
            let low = Backoff.delay(attempt: attempt, policy: policy, retryAfter: nil, jitter: 0).milliseconds
            let high = Backoff.delay(attempt: attempt, policy: policy, retryAfter: nil, jitter: 0.999_999).milliseconds
            #expect(low == step / 2)
            #expect(high <= step && high >= step - 1)
        }
        #expect(Backoff.delay(attempt: 1, policy: policy, retryAfter: .seconds(120), jitter: 0.5) == .seconds(120))
    }
}

@Suite("Admission limits")
struct AdmissionTests {
    private func entry(_ job: Int, host: String, className: String = "default") -> Scheduler.Entry {
        Scheduler.Entry(unit: .init(job: job, download: 0), priority: 0, arrival: job, host: host, className: className)
    }

    @Test("per-host limit: a full host does not block another host's jobs queued behind it")
    func perHostWithoutHeadOfLineBlocking() {
        var scheduler = Scheduler()
        for job in 0..<6 { scheduler.enqueue(entry(job, host: "slow.example")) }
        scheduler.enqueue(entry(6, host: "fast.example"))
        var admission = Admission(limits: .init(total: 4, perHost: 2))
        #expect(startAll(&scheduler, &admission) == [0, 1, 6])
        admission.finished(host: "slow.example", className: "default")
        #expect(startAll(&scheduler, &admission) == [2])
    }

    @Test("extra connections of split downloads count: room is what the host, the total and the class leave")
    func roomCountsConnections() {
        var admission = Admission(limits: .init(total: 6, perHost: 4, perClass: ["iso": 3]))
        #expect(admission.room(host: "a", className: "default") == 4)
        admission.started(host: "a", className: "iso")
        #expect(admission.room(host: "a", className: "iso") == 2)
        #expect(admission.room(host: "a", className: "default") == 3)
        for _ in 0..<3 { admission.started(host: "a", className: "default") }
        #expect(admission.room(host: "a", className: "default") == 0)
        #expect(!admission.admits(host: "a", className: "default"))
        #expect(admission.room(host: "b", className: "default") == 2)
        admission.finished(host: "a", className: "default")
        #expect(admission.room(host: "a", className: "default") == 1)
    }

    @Test("per-class max_active holds across hosts; other classes pass")
    func perClassLimit() {
        var scheduler = Scheduler()
        scheduler.enqueue(entry(0, host: "a", className: "iso"))
        scheduler.enqueue(entry(1, host: "b", className: "iso"))
        scheduler.enqueue(entry(2, host: "c", className: "default"))
        var admission = Admission(limits: .init(total: 4, perHost: 2, perClass: ["iso": 1]))
        #expect(startAll(&scheduler, &admission) == [0, 2])
        admission.finished(host: "a", className: "iso")
        #expect(startAll(&scheduler, &admission) == [1])
    }

    @Test("a max_active on the class default holds like any other (its count is kept apart)")
    func defaultClassLimit() {
        var admission = Admission(limits: .init(total: 4, perHost: 4, perClass: ["default": 1]))
        admission.started(host: "a", className: "default")
        #expect(admission.refusal(host: "b", className: "default") == .jobClass)
        #expect(admission.admits(host: "b", className: "iso"))
        #expect(admission.active(inClass: "default") == 1)
        #expect(admission.room(host: "b", className: "default") == 0)
        admission.finished(host: "a", className: "default")
        admission.finished(host: "a", className: "default")
        #expect(admission.active(inClass: "default") == 0, "an extra end does not go below zero")
        #expect(admission.admits(host: "b", className: "default"))
    }

    @Test("per-host counts stay right whichever host comes first, leaves and comes back, over 5,000 starts and ends")
    func perHostCountsAgainstAModel() {
        var admission = Admission(limits: .init(total: 1_000_000, perHost: 1_000))
        var model: [String: Int] = [:]
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        let hosts = ["a.example", "b.example", "c.example", "a.example:8080"]
        for step in 0..<5_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let host = hosts[Int(seed >> 33) % hosts.count]
            if (seed >> 20) % 3 == 0, model[host] != nil {
                admission.finished(host: host, className: "default")
                if let count = model[host] { model[host] = count > 1 ? count - 1 : nil }
            } else {
                admission.started(host: host, className: "default")
                model[host, default: 0] += 1
            }
            for name in hosts {
                #expect(admission.room(host: name, className: "default") == 1_000 - model[name, default: 0], "step \(step), host \(name)")
            }
        }
    }

    @Test("reloaded limits apply to the next starts; running ones are kept")
    func reloadOfLimits() {
        var scheduler = Scheduler()
        for job in 0..<8 { scheduler.enqueue(entry(job, host: "h\(job)")) }
        var admission = Admission(limits: .init(total: 1, perHost: 2))
        #expect(startAll(&scheduler, &admission) == [0])
        admission.limits = .init(total: 4, perHost: 2)
        #expect(startAll(&scheduler, &admission) == [1, 2, 3])
        admission.limits = .init(total: 2, perHost: 2)
        #expect(startAll(&scheduler, &admission).isEmpty)
        #expect(admission.active == 4)
    }

    @Test("limits are read from the config, classes without max_active are unlimited")
    func limitsFromConfig() {
        var config = Config()
        config.concurrency.total = 7
        config.concurrency.perHost = 3
        var iso = Config.JobClass(name: "iso")
        iso.maxActive = 1
        config.classes = [iso, Config.JobClass(name: "urgent")]
        #expect(Admission.Limits(config) == .init(total: 7, perHost: 3, perClass: ["iso": 1]))
    }

    @Test("a reload re-sorts queued units with their new priorities")
    func rebuildWithNewPriorities() {
        var scheduler = Scheduler()
        for job in 0..<3 { scheduler.enqueue(entry(job, host: "h")) }
        scheduler.rebuild(order: .fifo) { entry in entry.priority = entry.unit.job == 2 ? 50 : 0 }
        var order: [Int] = []
        while let next = scheduler.nextRunnable(now: 0, canStart: { _ in true }) { order.append(next.unit.job) }
        #expect(order == [2, 0, 1])
    }
}

@Suite("Scheduler cost")
struct SchedulerCostTests {
    private func entry(_ job: Int, download: Int = 0, priority: Int = 0, host: String, className: String = "default")
        -> Scheduler.Entry {
        Scheduler.Entry(unit: .init(job: job, download: download), priority: priority, arrival: job, host: host,
                        className: className)
    }

    /// Runs `n` units of one host under total 4 / per_host 2 as the agent does: start what the limits
    /// allow, then one running unit finishes, until all ran. Returns the scheduler's counters.
    private func runOneHost(_ n: Int) -> (operations: Int, probes: Int, order: [Int]) {
        var scheduler = Scheduler()
        for job in 0..<n { scheduler.enqueue(entry(job, host: "one.example")) }
        var admission = Admission(limits: .init(total: 4, perHost: 2))
        var running: [Int] = []
        var order: [Int] = []
        while true {
            let started = startAll(&scheduler, &admission)
            running += started
            order += started
            guard !running.isEmpty else { break }
            running.removeFirst()
            admission.finished(host: "one.example", className: "default")
        }
        #expect(scheduler.isEmpty)
        return (scheduler.heapOperations, scheduler.probes, order)
    }

    @Test("8,000 units on one host blocked by per_host: work grows linearly, not with the queue behind the head")
    func blockedHostIsLinear() {
        let small = runOneHost(1_000)
        let large = runOneHost(8_000)
        #expect(large.order == Array(0..<8_000))
        // Each start costs a push and a pop in the lane and the head's moves above it; each refusal
        // one probe and the lane set aside and put back. Rescanning the queue per decision, as the
        // pop-and-push-back scheduler did, costs about n²/2 = 32,000,000 operations here.
        #expect(large.operations <= 12 * 8_000, "heap operations: \(large.operations)")
        #expect(large.probes <= 3 * 8_000, "probes: \(large.probes)")
        // Linear: eight times the units, about eight times the work.
        #expect(Double(large.operations) / Double(small.operations) < 8.5)
        #expect(Double(large.probes) / Double(small.probes) < 8.5)
    }

    @Test("a decision passes a blocked host's 8,000 queued units with one probe")
    func blockedHeadCostsOneProbe() {
        var scheduler = Scheduler()
        for job in 0..<8_000 { scheduler.enqueue(entry(job, host: "busy.example")) }
        scheduler.enqueue(entry(8_000, host: "free.example"))
        let (operations, probes) = (scheduler.heapOperations, scheduler.probes)
        let next = scheduler.nextRunnable(now: 0) { $0.host != "busy.example" }
        #expect(next?.unit.job == 8_000)
        #expect(scheduler.probes - probes == 2)
        #expect(scheduler.heapOperations - operations <= 8)
        #expect(scheduler.readyCount == 8_000)
        #expect(scheduler.nextRunnable(now: 0) { _ in true }?.unit.job == 0)
    }

    @Test("a class at max_active is set aside whole: its 1,000 hosts are not probed one by one")
    func fullClassCostsOneProbe() {
        var scheduler = Scheduler()
        for job in 0..<1_000 { scheduler.enqueue(entry(job, priority: 10, host: "h\(job)", className: "iso")) }
        scheduler.enqueue(entry(1_000, host: "other.example"))
        var admission = Admission(limits: .init(total: 100, perHost: 2, perClass: ["iso": 1]))
        #expect(scheduler.nextRunnable(now: 0, admission: admission)?.unit.job == 0)
        admission.started(host: "h0", className: "iso")
        let probes = scheduler.probes
        #expect(scheduler.nextRunnable(now: 0, admission: admission)?.unit.job == 1_000)
        #expect(scheduler.probes - probes == 2)
        #expect(scheduler.nextRunnable(now: 0, admission: admission) == nil)
        #expect(scheduler.probes - probes == 3)
        admission.finished(host: "h0", className: "iso")
        #expect(scheduler.nextRunnable(now: 0, admission: admission)?.unit.job == 1)
    }

    @Test("removing a job takes its ready and waiting units, and costs O(log n) a unit")
    func removeJob() {
        var scheduler = Scheduler()
        for job in 0..<1_000 { scheduler.enqueue(entry(job, host: "h\(job % 7)")) }
        scheduler.enqueue(entry(5_000, download: 0, host: "a"))
        scheduler.enqueue(entry(5_000, download: 3, host: "b"))
        scheduler.enqueue(entry(5_000, download: 7, host: "c"), due: 50)
        let operations = scheduler.heapOperations
        scheduler.remove(job: 5_000)
        #expect(scheduler.heapOperations - operations <= 12)
        #expect(scheduler.readyCount == 1_000 && scheduler.waitingCount == 0)
        scheduler.remove(job: 3)
        scheduler.remove { $0.unit.job % 2 == 0 }
        var order: [Int] = []
        while let next = scheduler.nextRunnable(now: 100, canStart: { _ in true }) { order.append(next.unit.job) }
        #expect(order == (0..<1_000).filter { $0 % 2 == 1 && $0 != 3 })
    }

    @Test("a claimed job's downloads go before inbox jobs that arrived at the same time")
    func claimedBeforeUnclaimedOfSameArrival() {
        var scheduler = Scheduler()
        for job in 0..<100 {
            scheduler.enqueue(.init(unit: .init(job: job, download: Scheduler.Unit.wholeJob), priority: 0, arrival: 7,
                                    host: "a"))
        }
        #expect(scheduler.nextRunnable(now: 0) { _ in true }?.unit == .init(job: 0, download: Scheduler.Unit.wholeJob))
        // Claimed: its downloads queue under a new id, with the arrival of its file.
        scheduler.enqueue(.init(unit: .init(job: 500, download: 1), priority: 0, arrival: 7, host: "a"))
        scheduler.enqueue(.init(unit: .init(job: 500, download: 0), priority: 0, arrival: 7, host: "b"))
        #expect(scheduler.nextRunnable(now: 0) { _ in true }?.unit == .init(job: 500, download: 0))
        #expect(scheduler.nextRunnable(now: 0) { _ in true }?.unit == .init(job: 500, download: 1))
        #expect(scheduler.nextRunnable(now: 0) { _ in true }?.unit == .init(job: 1, download: Scheduler.Unit.wholeJob))
    }

    @Test("queueing a unit again replaces it")
    func enqueueReplaces() {
        var scheduler = Scheduler()
        scheduler.enqueue(entry(1, host: "a"))
        scheduler.enqueue(entry(2, host: "a"))
        scheduler.enqueue(entry(1, priority: 5, host: "b"))
        #expect(scheduler.readyCount == 2)
        scheduler.enqueue(entry(2, host: "a"), due: 10)
        #expect(scheduler.readyCount == 1 && scheduler.waitingCount == 1)
        #expect(scheduler.nextRunnable(now: 10) { _ in true } == entry(1, priority: 5, host: "b"))
        #expect(scheduler.nextRunnable(now: 10) { _ in true }?.unit.job == 2)
        #expect(scheduler.isEmpty)
    }

    /// The scheduler against a plain list searched in full at every decision, over random queueing,
    /// retries, removals, reloads and starts under random limits.
    @Test("decisions equal those of a full scan of the queue", arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func matchesFullScan(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        for order in [Config.Order.fifo, .lifo] {
            var scheduler = Scheduler(order: order)
            var model = FullScan(order: order)
            var admission = Admission(limits: .init(total: 5, perHost: 2, perClass: ["iso": 1, "big": 2]))
            var running: [Scheduler.Entry] = []
            var nextJob = 0
            for step in 0..<3_000 {
                let now = Int64(step)
                switch random.next() % 10 {
                case 0, 1:
                    let downloads = 1 + Int(random.next() % 3)
                    let whole = random.next() % 4 == 0
                    for download in (whole ? [-1] : Array(0..<downloads)) {
                        let e = Scheduler.Entry(
                            unit: .init(job: nextJob, download: download), priority: Int(random.next() % 3) * 5,
                            arrival: Int(random.next() % 50), host: "h\(random.next() % 6)",
                            className: ["default", "iso", "big"][Int(random.next() % 3)])
                        if random.next() % 5 == 0 {
                            let due = now + Int64(random.next() % 40)
                            scheduler.enqueue(e, due: due)
                            model.enqueue(e, due: due)
                        } else {
                            scheduler.enqueue(e)
                            model.enqueue(e, due: nil)
                        }
                    }
                    nextJob += 1
                case 2, 3, 4, 5:
                    let gate = admission
                    let got = scheduler.nextRunnable(now: now, admission: gate)
                    let expected = model.next(now: now) { gate.refusal(host: $0.host, className: $0.className) == nil }
                    #expect(got == expected, "seed \(seed) step \(step)")
                    if let got {
                        admission.started(host: got.host, className: got.className)
                        running.append(got)
                    }
                case 6, 7:
                    if !running.isEmpty {
                        let done = running.remove(at: Int(random.next() % UInt64(running.count)))
                        admission.finished(host: done.host, className: done.className)
                    }
                case 8:
                    if nextJob > 0 {
                        let job = Int(random.next() % UInt64(nextJob))
                        scheduler.remove(job: job)
                        model.entries.removeAll { $0.entry.unit.job == job }
                    }
                default:
                    if random.next() % 10 == 0 {
                        let bump = Int(random.next() % 7)
                        scheduler.rebuild(order: order) { $0.priority = $0.unit.job % 7 == bump ? 20 : $0.priority }
                        for i in model.entries.indices where model.entries[i].entry.unit.job % 7 == bump {
                            model.entries[i].entry.priority = 20
                        }
                    } else {
                        scheduler.promote(now: now)
                    }
                }
                #expect(scheduler.readyCount + scheduler.waitingCount == model.entries.count)
            }
        }
    }
}

/// Starts what the scheduler and the admission allow, as the agent's loop does.
private func startAll(_ scheduler: inout Scheduler, _ admission: inout Admission) -> [Int] {
    var started: [Int] = []
    while admission.hasRoom {
        let gate = admission
        guard let next = scheduler.nextRunnable(now: 0, canStart: {
            gate.admits(host: $0.host, className: $0.className)
        }) else { break }
        admission.started(host: next.host, className: next.className)
        started.append(next.unit.job)
    }
    return started
}

/// The reference: every decision looks at every queued unit.
private struct FullScan {
    let order: Config.Order
    var entries: [(entry: Scheduler.Entry, due: Int64?)] = []

    mutating func enqueue(_ entry: Scheduler.Entry, due: Int64?) {
        entries.removeAll { $0.entry.unit == entry.unit }
        entries.append((entry, due))
    }

    func precedes(_ a: Scheduler.Entry, _ b: Scheduler.Entry) -> Bool {
        if a.priority != b.priority { return a.priority > b.priority }
        if a.arrival != b.arrival { return order == .fifo ? a.arrival < b.arrival : a.arrival > b.arrival }
        if (a.unit.download == -1) != (b.unit.download == -1) { return b.unit.download == -1 }
        if a.unit.download != b.unit.download { return a.unit.download < b.unit.download }
        return order == .fifo ? a.unit.job < b.unit.job : a.unit.job > b.unit.job
    }

    mutating func next(now: Int64, admits: (Scheduler.Entry) -> Bool) -> Scheduler.Entry? {
        var best: Int?
        for (i, queued) in entries.enumerated() where (queued.due ?? .min) <= now && admits(queued.entry) {
            if best.map({ precedes(queued.entry, entries[$0].entry) }) ?? true { best = i }
        }
        return best.map { entries.remove(at: $0).entry }
    }
}

/// A heap order given as two closures, for heaps of test values.
struct ClosureOrder<Key: SlotKey, Element>: HeapOrder {
    let keyOf: (Element) -> Key
    let before: (Element, Element) -> Bool
    func key(of element: Element) -> Key { keyOf(element) }
    func precedes(_ a: Element, _ b: Element) -> Bool { before(a, b) }
}

@Suite("PriorityHeap")
struct PriorityHeapTests {
    @Test("pops in order after pushes, removals and replacements by key")
    func orderKept() {
        var random = SplitMix64(seed: 42)
        var heap = PriorityHeap(ClosureOrder<Int, (id: Int, value: Int)>(keyOf: { $0.id }, before: { $0.value < $1.value }))
        var model: [Int: Int] = [:]
        for _ in 0..<5_000 {
            let id = Int(random.next() % 700)
            switch random.next() % 3 {
            case 0, 1:
                let value = Int(random.next() % 10_000)
                heap.push((id, value))
                model[id] = value
            default:
                #expect(heap.remove(id)?.value == model.removeValue(forKey: id))
            }
            #expect(heap.count == model.count)
        }
        var popped: [Int] = []
        while let next = heap.pop() {
            #expect(model.removeValue(forKey: next.id) == next.value)
            popped.append(next.value)
        }
        #expect(popped == popped.sorted())
        #expect(model.isEmpty)
    }

    @Test("removing by key costs O(log n) comparisons")
    func removalIsLogarithmic() {
        var heap = PriorityHeap(ClosureOrder<Int, Int>(keyOf: { $0 }, before: { $0 < $1 }))
        let n = 1 << 16
        for value in (0..<n).reversed() { heap.push(value) }
        for value in stride(from: 1, to: n, by: 997) {
            let before = heap.comparisons
            #expect(heap.remove(value) == value)
            // Sifting down compares twice a level, sifting up once: 2 log2(n) + 1 at most.
            #expect(heap.comparisons - before <= 2 * 16 + 1)
        }
        #expect(heap.contains(0) && !heap.contains(1) && heap.first == 0)
    }
}
