import Testing
@testable import DropFetch

/// Issue 26: which bytes each connection of a segmented download fetches. The plan never lets two
/// segments own the same byte, never cuts a piece below min_size, and ends with every byte written.
@Suite("Segment plan")
struct SegmentPlanTests {
    private static let mib: Int64 = 1 << 20

    private func owned(_ plan: SegmentPlan) -> [PieceMap.Range] {
        (plan.active.values.map { PieceMap.Range($0.next, $0.end) } + plan.pending).sorted { $0.start < $1.start }
    }

    /// Every missing byte is owned by exactly one segment or pending range.
    private func expectPartition(_ plan: SegmentPlan, sourceLocation: SourceLocation = #_sourceLocation) {
        var next: Int64 = 0
        var covered = PieceMap(total: plan.map.total, done: plan.map.done)
        for range in owned(plan) where range.count > 0 {
            #expect(range.start >= next, "overlap at \(range.start)", sourceLocation: sourceLocation)
            covered.add(range)
            next = range.end
        }
        #expect(covered.isComplete, "a byte nobody fetches", sourceLocation: sourceLocation)
    }

    @Test("the piece map merges ranges and names exactly what is missing")
    func pieceMap() {
        var map = PieceMap(total: 100)
        map.add(.init(10, 20))
        map.add(.init(30, 40))
        map.add(.init(20, 30))
        map.add(.init(90, 120))
        #expect(map.done == [.init(10, 40), .init(90, 100)])
        #expect(map.missing == [.init(0, 10), .init(40, 90)])
        #expect(map.prefix == 0 && map.doneBytes == 40 && !map.isComplete)
        map.add(.init(0, 10))
        #expect(map.prefix == 40)
        map.add(.init(40, 90))
        #expect(map.isComplete && map.missing.isEmpty)
    }

    @Test("a 512 MiB file on 8 connections: the stream keeps the first share, 7 more get equal ones")
    func firstSplit() {
        var plan = SegmentPlan(map: PieceMap(total: 512 * Self.mib), minSize: Self.mib)
        let stream = plan.adoptStream(at: 0)
        #expect(stream.end == 512 * Self.mib)
        let opened = plan.fill(connections: 8)
        #expect(opened.count == 7)
        #expect(plan.active.count == 8)
        let sizes = plan.active.values.map(\.remaining).sorted()
        #expect(sizes.first! >= 512 * Self.mib / 8 - 1 && sizes.last! <= 512 * Self.mib / 8 + 8)
        #expect(opened.allSatisfy { $0.rangeHeader == "\($0.start)-\($0.end - 1)" })
        expectPartition(plan)
    }

    @Test("no piece is cut below min_size: 3 MiB with min 1 MiB gives at most 3 connections")
    func minimumSize() {
        var plan = SegmentPlan(map: PieceMap(total: 3 * Self.mib), minSize: Self.mib)
        _ = plan.adoptStream(at: 0)
        _ = plan.fill(connections: 8)
        #expect(plan.active.count <= 3)
        #expect(plan.active.values.allSatisfy { $0.remaining >= Self.mib })
        expectPartition(plan)
        var small = SegmentPlan(map: PieceMap(total: 2 * Self.mib - 1), minSize: Self.mib)
        _ = small.adoptStream(at: 0)
        #expect(small.fill(connections: 8).isEmpty)
    }

    @Test("a finished segment steals the back half of the largest one; bytes past a segment's end are refused")
    func workStealing() {
        var plan = SegmentPlan(map: PieceMap(total: 8 * Self.mib), minSize: Self.mib)
        let stream = plan.adoptStream(at: 0)
        let second = plan.fill(connections: 2)[0]
        #expect(second.start == 4 * Self.mib)
        let secondDone = plan.wrote(4 * Self.mib, for: second.id)
        #expect(secondDone)
        #expect(plan.admits(10, for: second.id) == 0)
        plan.close(second.id)
        plan.wrote(Self.mib, for: stream.id)
        let thief = plan.fill(connections: 2)
        #expect(thief.count == 1)
        #expect(thief.first.map { PieceMap.Range($0.start, $0.end) } == PieceMap.Range(Self.mib * 5 / 2, 4 * Self.mib))
        #expect(plan.active[stream.id]?.end == Self.mib * 5 / 2)
        #expect(plan.admits(3 << 20, for: stream.id) == Int(Self.mib * 3 / 2))
        expectPartition(plan)
        plan.wrote(3 * Self.mib, for: stream.id)
        plan.wrote(3 * Self.mib, for: thief[0].id)
        let complete = plan.isComplete
        #expect(complete)
    }

    @Test("a resumed download fetches only its missing pieces, and a closed segment's rest is fetched again")
    func resumeMissing() {
        let map = PieceMap(total: 10 * Self.mib, done: [.init(0, 3 * Self.mib), .init(6 * Self.mib, 8 * Self.mib)])
        var plan = SegmentPlan(map: map, minSize: Self.mib)
        let opened = plan.fill(connections: 4)
        let asked = opened.map { PieceMap.Range($0.start, $0.end) }
        for range in asked {
            #expect(map.intersection(PieceMap(total: map.total, done: [range])).done.isEmpty, "fetches a done byte: \(range)")
        }
        expectPartition(plan)
        let first = opened[0]
        plan.wrote(1000, for: first.id)
        let end = plan.active[first.id]?.end ?? 0
        plan.close(first.id)
        #expect(plan.pending.contains(.init(first.start + 1000, end)))
        expectPartition(plan)
    }

    @Test("the first connection of a resume with holes owns only the missing range it starts in")
    func streamStopsAtTheNextPiece() {
        let map = PieceMap(total: 10 * Self.mib, done: [.init(0, 2 * Self.mib), .init(5 * Self.mib, 6 * Self.mib)])
        var plan = SegmentPlan(map: map, minSize: Self.mib)
        let stream = plan.adoptStream(at: 2 * Self.mib)
        #expect(stream.start == 2 * Self.mib && stream.end == 5 * Self.mib)
        #expect(plan.pending == [.init(6 * Self.mib, 10 * Self.mib)])
        expectPartition(plan)
    }
}
