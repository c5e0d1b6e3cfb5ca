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
