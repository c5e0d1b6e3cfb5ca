@testable import DropFetch
import Testing

@Suite("Fair share of nested bandwidth limits")
struct FairShareTests {
    /// One row: the limits, each transfer as (class, own limit, demand), and the rates expected.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var total: Double?
        var groups: [String: Double] = [:]
        var claims: [(group: String, cap: Double?, demand: Double)]
        var expected: [Double?]

        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "no limit anywhere: nobody is throttled", total: nil,
            claims: [("a", nil, .infinity), ("b", nil, .infinity)], expected: [nil, nil]),
        Row(name: "a download's own limit alone", total: nil,
            claims: [("a", 200, .infinity), ("a", nil, .infinity)], expected: [200, nil]),
        Row(name: "global limit split evenly among three", total: 300,
            claims: [("a", nil, .infinity), ("a", nil, .infinity), ("b", nil, .infinity)], expected: [100, 100, 100]),
        Row(name: "a share one transfer cannot use goes to the others", total: 300,
            claims: [("a", nil, 50), ("a", nil, .infinity), ("a", nil, .infinity)], expected: [50, 125, 125]),
        Row(name: "an own limit under the even share frees the rest", total: 300,
            claims: [("a", 60, .infinity), ("a", nil, .infinity)], expected: [60, 240]),
        Row(name: "a class limit slows only its class", total: nil, groups: ["slow": 100],
            claims: [("slow", nil, .infinity), ("slow", nil, .infinity), ("fast", nil, .infinity)],
            expected: [50, 50, nil]),
        Row(name: "class and global together: the class takes its limit, the rest shares the remainder",
            total: 300, groups: ["slow": 60],
            claims: [("slow", nil, .infinity), ("slow", nil, .infinity), ("fast", nil, .infinity), ("fast", nil, .infinity)],
            expected: [30, 30, 120, 120]),
        Row(name: "a class limit above its even share of the global one does not bind", total: 300, groups: ["big": 250],
            claims: [("big", nil, .infinity), ("other", nil, .infinity)], expected: [150, 150]),
        Row(name: "own, class and global limits at once", total: 400, groups: ["c": 150],
            claims: [("c", 20, .infinity), ("c", nil, .infinity), ("d", nil, .infinity), ("d", nil, 10)],
            expected: [20, 130, 240, 10]),
        Row(name: "everyone wants less than the limit: each gets what it wants", total: 1000,
            claims: [("a", nil, 100), ("a", nil, 200)], expected: [100, 200]),
    ]

    @Test(arguments: rows)
    func divide(_ row: Row) {
        let claims = row.claims.map { FairShare.Claim(group: $0.group, cap: $0.cap, demand: $0.demand) }
        let rates = FairShare.divide(claims, total: row.total, groups: row.groups)
        #expect(rates.count == row.expected.count)
        for (rate, expected) in zip(rates, row.expected) {
            switch (rate, expected) {
            case (nil, nil): break
            case (let rate?, let expected?): #expect(abs(rate - expected) < 1e-6, "\(rates) vs \(row.expected)")
            default: Issue.record("\(rates) vs \(row.expected)")
            }
        }
        if let total = row.total {
            #expect(rates.compactMap { $0 }.reduce(0, +) <= total + 1e-6)
        }
    }

    @Test("even shares: the least each gets when all are greedy")
    func evenShares() {
        let claims = [FairShare.Claim(group: "c", cap: 20), FairShare.Claim(group: "c"), FairShare.Claim(group: "d")]
        let shares = FairShare.evenShares(claims, total: 300, groups: ["c": 100])
        #expect(shares == [20, 50, 100])
        #expect(FairShare.evenShares(claims, total: nil, groups: [:]) == [20, nil, nil])
    }
}
