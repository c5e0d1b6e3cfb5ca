@testable import DropFetch
import Testing

@Suite("Bandwidth budget: token buckets in virtual time")
struct BandwidthBudgetTests {
    /// Drives a budget as the event loop and libcurl do, one virtual millisecond at a time: each
    /// transfer offers `chunk`-byte writes as fast as its server sends (`supply` bytes per second,
    /// nil for as fast as asked), a refused write pauses it, and `takeResumable` lets it go again.
    struct Simulation {
        struct Source {
            var className = "default"
            var ownLimit: Int64?
            var supply: Double?
            var chunk = 12_800
            var buffered = 0.0
            var paused = false
            /// Bytes taken by the write callback, by virtual millisecond since the start.
            var received: [Int64] = []
        }

        var budget = BandwidthBudget()
        var sources: [Int: Source] = [:]
        let start: Int64 = 5_000_000
        var now: Int64 = 5_000_000

        init(total: Int64 = 0, perClass: [String: Int64] = [:]) {
            budget.setLimits(.init(total: total, perClass: perClass))
        }

        mutating func add(_ id: Int, _ source: Source) {
            var source = source
            source.received = [0]
            sources[id] = source
            budget.add(id, className: source.className, ownLimit: source.ownLimit, now: now)
            budget.rebalance(now: now)
        }

        mutating func remove(_ id: Int) {
            sources[id] = nil
            budget.remove(id)
            budget.rebalance(now: now)
        }

        mutating func run(seconds: Double) {
            let end = now + Int64(seconds * 1000)
            while now < end {
                now += 1
                budget.rebalanceIfDue(now: now)
                for id in budget.takeResumable(now: now) { sources[id]?.paused = false }
                for id in sources.keys.sorted() {
                    guard var source = sources[id] else { continue }
                    source.buffered += source.supply.map { $0 / 1000 } ?? Double(source.chunk * 64)
                    var taken: Int64 = source.received.last ?? 0
                    while !source.paused, source.buffered >= 1 {
                        let bytes = min(source.chunk, Int(source.buffered))
                        if budget.admit(id, bytes: bytes, now: now) {
                            taken += Int64(bytes)
                            source.buffered -= Double(bytes)
                        } else {
                            source.paused = true
                        }
                    }
                    if source.supply == nil { source.buffered = min(source.buffered, Double(source.chunk)) }
                    source.received.append(taken)
                    sources[id] = source
                }
            }
        }

        /// Average bytes per second of a transfer between two moments (seconds since the start).
        func rate(_ id: Int, from: Double, to: Double) -> Double {
            let received = sources[id]!.received
            let first = received[min(received.count - 1, Int(from * 1000))]
            let last = received[min(received.count - 1, Int(to * 1000))]
            return Double(last - first) / (to - from)
        }
    }

    private func within(_ value: Double, _ target: Double, _ tolerance: Double) -> Bool {
        abs(value - target) <= target * tolerance
    }

    @Test("no limit: every write is taken, no timer, nothing to resume")
    func unlimited() {
        var budget = BandwidthBudget()
        budget.add(1, className: "default", ownLimit: nil, now: 0)
        budget.rebalance(now: 0)
        #expect(!budget.isActive)
        #expect(!budget.isLimited(1))
        let admitted = budget.admit(1, bytes: 1 << 20, now: 1)
        #expect(admitted)
        #expect(budget.nextWake(now: 1) == nil)
        let resumable = budget.takeResumable(now: 2)
        #expect(resumable.isEmpty)
        #expect(budget.rateLimit(of: 1) == nil)
    }

    @Test("one download at 200K: no burst at the start, within ±10% from 1 s on, ±2% over 6 s")
    func ownLimit() {
        var simulation = Simulation()
        simulation.add(1, .init(ownLimit: 204_800))
        simulation.run(seconds: 6)
        #expect(simulation.rate(1, from: 0, to: 1) <= 204_800 * 1.1)
        for end in [3.0, 4.0, 5.0, 6.0] {
            #expect(within(simulation.rate(1, from: 1, to: end), 204_800, 0.1), "1 s to \(end) s")
        }
        #expect(within(simulation.rate(1, from: 0, to: 6), 204_800, 0.02))
        #expect(simulation.budget.rateLimit(of: 1) == 204_800)
    }

    @Test("a 20K limit with 1 KiB writes holds within ±10% from 1 s on")
    func lowRate() {
        var simulation = Simulation()
        simulation.add(1, .init(ownLimit: 20_480, chunk: 1280))
        simulation.run(seconds: 5)
        for end in [3.0, 5.0] {
            #expect(within(simulation.rate(1, from: 1, to: end), 20_480, 0.1), "1 s to \(end) s")
        }
    }

    @Test("three transfers under a global 300K get 100K each")
    func globalSplit() {
        var simulation = Simulation(total: 307_200)
        for id in 1...3 { simulation.add(id, .init()) }
        simulation.run(seconds: 6)
        for id in 1...3 {
            #expect(within(simulation.rate(id, from: 1, to: 6), 102_400, 0.05), "transfer \(id)")
            #expect(simulation.budget.rateLimit(of: id) == 102_400)
        }
    }

    @Test("a share a slow transfer cannot use goes to the others, and the total holds")
    func slowSourceLeavesItsShare() {
        var simulation = Simulation(total: 307_200)
        simulation.add(1, .init(supply: 40_000))
        simulation.add(2, .init())
        simulation.add(3, .init())
        simulation.run(seconds: 8)
        #expect(within(simulation.rate(1, from: 2, to: 8), 40_000, 0.05))
        let total = (1...3).map { simulation.rate($0, from: 2, to: 8) }.reduce(0, +)
        #expect(total <= 307_200 * 1.02)
        #expect(total >= 307_200 * 0.9, "the slow transfer's share was not passed on: \(total)")
        #expect(within(simulation.rate(2, from: 2, to: 8), simulation.rate(3, from: 2, to: 8), 0.05))
        // The slow one could still have its third of the limit if it asked for more.
        #expect(simulation.budget.rateLimit(of: 1).map { within(Double($0), 102_400, 0.01) } == true)
    }

    @Test("a class limit throttles only its class")
    func classLimit() {
        var simulation = Simulation(perClass: ["slow": 102_400])
        simulation.add(1, .init(className: "slow"))
        simulation.add(2, .init(className: "slow"))
        simulation.add(3, .init(className: "fast"))
        #expect(!simulation.budget.isLimited(3))
        #expect(simulation.budget.rateLimit(of: 3) == nil)
        simulation.run(seconds: 5)
        for id in [1, 2] { #expect(within(simulation.rate(id, from: 1, to: 5), 51_200, 0.1), "transfer \(id)") }
        #expect(simulation.rate(3, from: 1, to: 5) > 1_000_000)
    }

    @Test("a transfer that ends gives its share to those left at once")
    func departureRebalances() {
        var simulation = Simulation(total: 204_800)
        simulation.add(1, .init())
        simulation.add(2, .init())
        simulation.run(seconds: 2)
        simulation.remove(2)
        simulation.run(seconds: 3)
        #expect(within(simulation.rate(1, from: 2.5, to: 5), 204_800, 0.1))
    }

    @Test("lifting a limit: the paused transfer is resumable at once and pays nothing after")
    func liftLimit() {
        var simulation = Simulation(total: 102_400)
        simulation.add(1, .init())
        simulation.run(seconds: 1.5)
        #expect(simulation.sources[1]!.paused || simulation.budget.isLimited(1))
        simulation.budget.setLimits(.init())
        simulation.budget.rebalance(now: simulation.now)
        #expect(!simulation.budget.isLimited(1))
        #expect(simulation.budget.nextWake(now: simulation.now).map { $0 <= simulation.now } ?? true)
        simulation.run(seconds: 0.5)
        #expect(simulation.rate(1, from: 1.6, to: 2) > 1_000_000)
        #expect(!simulation.budget.isActive)
        #expect(simulation.budget.nextWake(now: simulation.now) == nil)
    }

    @Test("lowering a limit mid-transfer takes effect at once")
    func lowerLimit() {
        var simulation = Simulation(total: 204_800)
        simulation.add(1, .init())
        simulation.run(seconds: 2)
        simulation.budget.setLimits(.init(total: 20_480))
        simulation.budget.rebalance(now: simulation.now)
        simulation.run(seconds: 4)
        #expect(within(simulation.rate(1, from: 3, to: 6), 20_480, 0.1))
    }

    @Test("the wake-up time is when the paused transfer's bucket has refilled, not before")
    func wakeTime() {
        var budget = BandwidthBudget()
        budget.add(1, className: "default", ownLimit: 16_000, now: 0)
        budget.rebalance(now: 0)
        #expect(budget.isLimited(1))
        let first = budget.admit(1, bytes: 1000, now: 0)
        #expect(!first, "a bucket starts empty")
        let wake = budget.nextWake(now: 0)
        // The resume level is a sixteenth of a second at 16,000 B/s: 1000 bytes, 62.5 ms.
        #expect(wake == 63)
        let early = budget.takeResumable(now: 62)
        #expect(early.isEmpty)
        let due = budget.takeResumable(now: 63)
        #expect(due == [1])
        let again = budget.admit(1, bytes: 1000, now: 63)
        #expect(again)
    }
}
