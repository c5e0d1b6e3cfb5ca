import Testing
@testable import DropFetch

/// The scheduler's index maps (`SlotTable`) answer as a `Dictionary` would, through growth and
/// the backward shifts of deletion, with keys that collide in their bits and in their buckets.
@Suite struct SlotTableTests {
    /// A key whose bits are only its low byte: many keys share a bucket and long runs form.
    struct Crowded: SlotKey {
        var id: Int
        var slotBits: UInt64 { UInt64(id & 0xFF) }
        static let vacant = Crowded(id: .min)
    }

    @Test(arguments: [7, 300, 5000])
    func answersAsADictionary(keyRange: Int) {
        var generator = SplitMix64.seeded()
        let seed = generator.seed
        var table = SlotTable<Int>()
        var crowded = SlotTable<Crowded>()
        var expected: [Int: Int] = [:]
        for step in 0..<40_000 {
            let key = Int.random(in: -keyRange...keyRange, using: &generator)
            if Bool.random(using: &generator) || step % 7 == 0 {
                #expect(table.remove(key) == expected[key], "seed \(seed), step \(step)")
                crowded[Crowded(id: key)] = nil
                expected[key] = nil
            } else {
                table[key] = step
                crowded[Crowded(id: key)] = step
                expected[key] = step
            }
            #expect(table.count == expected.count, "seed \(seed), step \(step)")
        }
        for key in -keyRange...keyRange {
            #expect(table[key] == expected[key], "seed \(seed)")
            #expect(crowded[Crowded(id: key)] == expected[key], "seed \(seed)")
        }
        #expect(crowded.count == expected.count, "seed \(seed)")
    }

    @Test func reservedRoomKeepsEveryKey() {
        var table = SlotTable<Int32>()
        table.reserveCapacity(1000)
        for key in Int32(0)..<3000 { table[key * 64] = Int(key) }
        #expect(table.count == 3000)
        #expect((Int32(0)..<3000).allSatisfy { table[$0 * 64] == Int($0) })
        table.removeAll()
        #expect(table.isEmpty && table[0] == nil)
    }
}
