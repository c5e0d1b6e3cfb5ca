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

    @Test("a 512 MiB file on 8 connections: pieces of 4 MiB (16 rounds), the stream keeps the first, 7 more take the next ones in order")
    func firstSplit() {
        var plan = SegmentPlan(map: PieceMap(total: 512 * Self.mib), minSize: Self.mib, connections: 8)
        #expect(plan.pieceSize == 4 * Self.mib)
        let stream = plan.adoptStream(at: 0)
        #expect(stream.start == 0 && stream.end == 4 * Self.mib)
        let opened = plan.fill(connections: 8)
        #expect(opened.count == 7)
        #expect(plan.active.count == 8)
        #expect(opened.map(\.start) == (1...7).map { Int64($0) * 4 * Self.mib })
        #expect(opened.allSatisfy { $0.remaining == 4 * Self.mib && $0.rangeHeader == "\($0.start)-\($0.end - 1)" })
        #expect(plan.pending == [.init(32 * Self.mib, 512 * Self.mib)])
        expectPartition(plan)
    }

    @Test("pieces are never below min_size, and few enough rounds that they are not: 512 MiB, 8 connections, 20 MiB least")
    func pieceSize() {
        let plan = SegmentPlan(map: PieceMap(total: 512 * Self.mib), minSize: 20 * Self.mib, connections: 8)
        // 3 rounds of 8 pieces: 21.33 MiB each, no short piece left over at the end.
        #expect(plan.pieceSize == (512 * Self.mib + 23) / 24)
        let resumed = SegmentPlan(map: PieceMap(total: 100 * Self.mib, done: [.init(0, 90 * Self.mib)]), minSize: Self.mib, connections: 8)
        #expect(resumed.pieceSize == 10 * Self.mib / 8, "10 MiB missing on 8 connections: one round")
    }

    @Test("no piece is cut below min_size: 3 MiB with min 1 MiB gives at most 3 connections")
    func minimumSize() {
        var plan = SegmentPlan(map: PieceMap(total: 3 * Self.mib), minSize: Self.mib, connections: 8)
        _ = plan.adoptStream(at: 0)
        _ = plan.fill(connections: 8)
        #expect(plan.active.count <= 3)
        #expect(plan.active.values.allSatisfy { $0.remaining >= Self.mib })
        expectPartition(plan)
        var small = SegmentPlan(map: PieceMap(total: 2 * Self.mib - 1), minSize: Self.mib, connections: 8)
        _ = small.adoptStream(at: 0)
        #expect(small.fill(connections: 8).isEmpty)
    }

    @Test("front to back: the prefix grows while pieces arrive; once none is left a free connection steals the back half of the slow one")
    func frontToBackThenStealing() {
        // 96 MiB on 2 connections, min 1 MiB: 16 rounds of 3 MiB.
        var plan = SegmentPlan(map: PieceMap(total: 96 * Self.mib), minSize: Self.mib, connections: 2)
        #expect(plan.pieceSize == 3 * Self.mib)
        let stream = plan.adoptStream(at: 0)
        var handedOut = [stream.start] + plan.fill(connections: 2).map(\.start)
        var steals: [SegmentPlan.Segment] = []
        var prefixAtHalf: Int64?
        // Each step even pieces get 1 MiB, odd ones 512 KiB; the last piece handed out stalls
        // (writes nothing) until a free connection stole its back half.
        var stalled: Int?
        var step = 0
        while !plan.isComplete, step < 10_000 {
            step += 1
            for id in plan.active.keys.sorted() {
                let count: Int64 = id == stalled && steals.isEmpty ? 0 : id % 2 == 0 ? Self.mib : Self.mib / 2
                if plan.wrote(count, for: id) { plan.close(id) }
            }
            if prefixAtHalf == nil, plan.map.doneBytes >= 48 * Self.mib { prefixAtHalf = plan.map.prefix }
            // One connection at a time: a stolen piece starts inside a running one, a handed-out one where nothing runs.
            while plan.active.count < 2 {
                let running = plan.active.values.map { PieceMap.Range($0.next, $0.end) }
                guard let segment = plan.fill(connections: plan.active.count + 1).first else { break }
                guard running.contains(where: { $0.start < segment.start && segment.start < $0.end }) else {
                    handedOut.append(segment.start)
                    if plan.pending.isEmpty, stalled == nil { stalled = segment.id }
                    continue
                }
                steals.append(segment)
                let victim = plan.active.values.first { $0.end == segment.start }
                #expect(victim != nil, "the victim stops where the thief starts")
                if let victim { #expect(plan.admits(Int(4 * Self.mib), for: victim.id) == Int(victim.remaining)) }
            }
        }
        #expect(plan.isComplete, "not complete after \(step) steps")
        #expect(handedOut == handedOut.sorted(), "pieces out of order: \(handedOut)")
        // Half the bytes in, the prefix without a hole is close behind (two halves of 48 MiB would
        // have it at about 32 MiB): the slow connection's piece and what the fast one did meanwhile.
        #expect((prefixAtHalf ?? 0) >= 48 * Self.mib - 4 * plan.pieceSize, "prefix \(prefixAtHalf ?? 0) at half")
        #expect(!steals.isEmpty, "the stuck piece was never stolen")
        #expect(steals.allSatisfy { $0.remaining >= Self.mib }, "a stolen piece below min_size")
    }

    @Test("a resumed download fetches only its missing pieces, and a closed segment's rest is fetched again")
    func resumeMissing() {
        let map = PieceMap(total: 10 * Self.mib, done: [.init(0, 3 * Self.mib), .init(6 * Self.mib, 8 * Self.mib)])
        var plan = SegmentPlan(map: map, minSize: Self.mib, connections: 4)
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

    @Test("the first connection of a resume with holes owns one piece of the missing range it starts in, never past it")
    func streamStopsAtTheNextPiece() {
        let map = PieceMap(total: 10 * Self.mib, done: [.init(0, 2 * Self.mib), .init(5 * Self.mib, 6 * Self.mib)])
        // 7 MiB missing on 8 connections: pieces of 1 MiB; the rest of its range stays pending, in front.
        var plan = SegmentPlan(map: map, minSize: Self.mib, connections: 8)
        let stream = plan.adoptStream(at: 2 * Self.mib)
        #expect(stream.start == 2 * Self.mib && stream.end == 3 * Self.mib)
        #expect(plan.pending == [.init(3 * Self.mib, 5 * Self.mib), .init(6 * Self.mib, 10 * Self.mib)])
        expectPartition(plan)
        // Pieces of 3.5 MiB (2 connections, 2 MiB least): the range ends first, at the piece on disk.
        var wide = SegmentPlan(map: map, minSize: 2 * Self.mib, connections: 2)
        let whole = wide.adoptStream(at: 2 * Self.mib)
        #expect(whole.start == 2 * Self.mib && whole.end == 5 * Self.mib)
        #expect(wide.pending == [.init(6 * Self.mib, 10 * Self.mib)])
        expectPartition(wide)
    }
}
