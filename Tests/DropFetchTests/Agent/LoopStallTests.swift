@testable import DropFetch
import Testing

@Suite("Loop stall")
struct LoopStallTests {
    private let second: Int64 = 1_000_000_000

    @Test("the longest turn of the last minute; waits between turns do not count")
    func longestOfLastMinute() {
        var stall = LoopStall()
        #expect(stall.longest(at: 100 * second) == 0)
        stall.begin(at: 100 * second)
        stall.end(at: 100 * second + 30_000_000)
        stall.begin(at: 130 * second)
        stall.end(at: 130 * second + 4_000_000)
        stall.end(at: 150 * second)
        #expect(stall.longest(at: 131 * second) == 0.03)
        #expect(stall.longest(at: 159 * second) == 0.03)
        #expect(stall.longest(at: 161 * second) == 0.004)
        #expect(stall.longest(at: 200 * second) == 0)
        // Second 190 takes the slot of second 130.
        stall.begin(at: 190 * second)
        stall.end(at: 190 * second + 1_000_000)
        #expect(stall.longest(at: 190 * second) == 0.001)
        #expect(stall.longest(at: 249 * second) == 0.001)
    }
}
