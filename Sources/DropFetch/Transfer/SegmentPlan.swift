/// Which connection of a segmented download fetches which bytes (issue 26): the first split, and
/// work stealing when a segment ends, so the tail never waits on one slow connection.
///
/// A segment owns `[next, end)`: `next` moves as its bytes are written, and `end` only ever
/// shrinks (when another segment takes the back half). Pure: the caller opens the connections.
struct SegmentPlan: Sendable, Equatable {
    struct Segment: Sendable, Equatable {
        let id: Int
        /// The first byte its request asked for (the `Range` start).
        let start: Int64
        /// The next byte to write.
        var next: Int64
        /// One past the last byte it may write; never past the request's end.
        var end: Int64
        var remaining: Int64 { end - next }
        /// The `Range` header value for a request of `[next, end)`: inclusive bounds (RFC 9110 §14.1.2).
        var rangeHeader: String { "\(next)-\(end - 1)" }
    }

    private(set) var map: PieceMap
    let minSize: Int64
    /// Segments writing now, by id.
    private(set) var active: [Int: Segment] = [:]
    /// Missing ranges no segment owns yet, in order.
    private(set) var pending: [PieceMap.Range]
    private var nextID = 0

    /// A plan for the ranges `map` lacks; pieces are never cut below `minSize`.
    init(map: PieceMap, minSize: Int64) {
        self.map = map
        self.minSize = max(1, minSize)
        pending = map.missing
    }

    /// Takes the first connection's open-ended response as segment 0: from `offset` to the end of
    /// the missing range it falls in (a resume with holes stops at the next piece on disk).
    mutating func adoptStream(at offset: Int64) -> Segment {
        let owning = pending.first { $0.start <= offset && offset < $0.end }
        let end = owning?.end ?? pending.first { $0.start > offset }?.start ?? map.total
        pending = pending.compactMap { range in
            guard range.start < end, range.end > offset else { return range }
            return range.start < offset ? PieceMap.Range(range.start, offset) : nil
        }
        return open(PieceMap.Range(offset, end))
    }

    /// The segments to open so that at most `connections` run, splitting pending ranges and the
    /// largest running one, none smaller than `minSize` (a split needs twice `minSize` left).
    mutating func fill(connections: Int) -> [Segment] {
        var opened: [Segment] = []
        while active.count < connections, let segment = nextSegment(connections: connections) {
            opened.append(segment)
        }
        return opened
    }

    private mutating func nextSegment(connections: Int) -> Segment? {
        if !pending.isEmpty {
            var range = pending.removeFirst()
            // Only the free connections share a pending range; a remainder goes back in front.
            let share = range.count / Int64(max(1, connections - active.count))
            if share >= minSize, range.count - share >= minSize {
                pending.insert(PieceMap.Range(range.start + share, range.end), at: 0)
                range.end = range.start + share
            }
            return open(range)
        }
        return steal()
    }

    /// Work stealing: the back half of the running segment with the most left, if at least twice `minSize` is.
    mutating func steal() -> Segment? {
        guard let victim = active.values.max(by: { ($0.remaining, $1.id) < ($1.remaining, $0.id) }),
              victim.remaining >= 2 * minSize else { return nil }
        let middle = victim.next + victim.remaining / 2
        active[victim.id]?.end = middle
        return open(PieceMap.Range(middle, victim.end))
    }

    private mutating func open(_ range: PieceMap.Range) -> Segment {
        let segment = Segment(id: nextID, start: range.start, next: range.start, end: range.end)
        nextID += 1
        active[segment.id] = segment
        return segment
    }

    /// How many of `count` bytes arriving for segment `id` may be written (never past its end).
    func admits(_ count: Int, for id: Int) -> Int {
        guard let segment = active[id] else { return 0 }
        return Int(min(Int64(count), max(0, segment.remaining)))
    }

    /// Records `count` bytes written at segment `id`'s `next`; true when the segment is complete.
    @discardableResult
    mutating func wrote(_ count: Int64, for id: Int) -> Bool {
        guard let segment = active[id], count > 0 else { return active[id]?.remaining == 0 }
        let written = min(count, segment.remaining)
        map.add(PieceMap.Range(segment.next, segment.next + written))
        active[id]?.next += written
        return active[id]?.remaining == 0
    }

    /// Ends segment `id`: what it did not write goes back to `pending`.
    mutating func close(_ id: Int) {
        guard let segment = active.removeValue(forKey: id) else { return }
        if segment.remaining > 0 {
            pending.append(PieceMap.Range(segment.next, segment.end))
            pending.sort { $0.start < $1.start }
        }
    }

    var isComplete: Bool { map.isComplete }
}
