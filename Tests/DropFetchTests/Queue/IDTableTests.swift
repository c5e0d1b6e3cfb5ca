import Testing
@testable import DropFetch

/// The job and transfer tables' map (`IDTable`) answers as a `Dictionary` would, through the
/// moves of removal, and its values are exactly the values present.
@Suite struct IDTableTests {
    @Test(arguments: [5, 200, 3000])
    func answersAsADictionary(idRange: Int) {
        var generator = SplitMix64.seeded()
        let seed = generator.seed
        var table = IDTable<String>()
        var expected: [Int: String] = [:]
        for step in 0..<30_000 {
            let id = Int.random(in: 0...idRange, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0:
                #expect(table.removeValue(forID: id) == expected.removeValue(forKey: id), "seed \(seed), step \(step)")
            case 1:
                table[id] = nil
                expected[id] = nil
            default:
                table[id] = "v\(step)"
                expected[id] = "v\(step)"
            }
            #expect(table.count == expected.count, "seed \(seed), step \(step)")
        }
        for id in 0...idRange { #expect(table[id] == expected[id], "seed \(seed)") }
        #expect(table.values.sorted() == expected.values.sorted(), "seed \(seed)")
        #expect(table.ids.sorted() == expected.keys.sorted(), "seed \(seed)")
        #expect(zip(table.ids, table.values).allSatisfy { expected[$0] == $1 }, "seed \(seed)")
    }

    @Test func emptiedAndRefilled() {
        var table = IDTable<Int>()
        for id in 0..<100 { table[id] = id * 2 }
        table.removeAll()
        #expect(table.isEmpty && table[5] == nil && table.values.isEmpty)
        table[5] = 1
        #expect(table[5] == 1 && table.count == 1)
    }
}
