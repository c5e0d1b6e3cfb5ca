/// Which connection of a segmented download fetches which bytes (issue 26): pieces handed out front
/// to back, and work stealing once none is left, so the tail never waits on one slow connection.
///
/// Front to back (issue 36): the connections work side by side near the start of what is missing,
/// so the prefix without a hole grows while the data arrives and the digest worker hashes it beside
/// the transfer; only the last round of pieces is left to hash after the last byte. Equal pieces
/// keep the connections finishing together, so none idles at the end.
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
    /// The size of the pieces handed out: what is missing in rounds of one piece per connection
    /// (at most `maxRounds`), never below `minSize`. The last round is what is hashed after the last byte.
    let pieceSize: Int64
    /// Rounds of pieces at most: more requests would buy a shorter hash at the end of a huge file
    /// than it is worth (at 16, a 16th of the file, while SHA-256 outruns most downloads).
    static let maxRounds: Int64 = 16
    /// Segments writing now, by id.
    private(set) var active: [Int: Segment] = [:]
    /// Missing ranges no segment owns yet, in order.
    private(set) var pending: [PieceMap.Range]
    private var nextID = 0

    /// A plan for the ranges `map` lacks, fetched over up to `connections`; pieces are never cut below `minSize`.
    init(map: PieceMap, minSize: Int64, connections: Int) {
        self.map = map
        self.minSize = max(1, minSize)
        pending = map.missing
        let missing = max(0, map.total - map.doneBytes)
        let lanes = Int64(max(1, connections))
        let rounds = min(SegmentPlan.maxRounds, max(1, missing / (lanes * self.minSize)))
        pieceSize = max(self.minSize, (missing + lanes * rounds - 1) / (lanes * rounds))
    }

    /// Takes the first connection's open-ended response as segment 0: from `offset`, one piece of
    /// the missing range it falls in (a resume with holes stops at the next piece on disk).
    mutating func adoptStream(at offset: Int64) -> Segment {
        let owning = pending.first { $0.start <= offset && offset < $0.end }
        let end = pieceEnd(from: offset, limit: owning?.end ?? pending.first { $0.start > offset }?.start ?? map.total)
        pending = pending.flatMap { range -> [PieceMap.Range] in
            guard range.start < end, range.end > offset else { return [range] }
            var kept: [PieceMap.Range] = []
            if range.start < offset { kept.append(PieceMap.Range(range.start, offset)) }
            if range.end > end { kept.append(PieceMap.Range(end, range.end)) }
            return kept
        }
        return open(PieceMap.Range(offset, end))
    }

    /// The end of the piece starting at `start` in a range ending at `limit`: `pieceSize` on, or
    /// `limit` when what would be left is smaller than `minSize`.
    private func pieceEnd(from start: Int64, limit: Int64) -> Int64 {
        limit - start - pieceSize >= minSize ? start + pieceSize : limit
    }

    /// The segments to open so that at most `connections` run: the first pieces of what is pending,
    /// then halves of the largest running one, none smaller than `minSize` (a split needs twice `minSize` left).
    mutating func fill(connections: Int) -> [Segment] {
        var opened: [Segment] = []
        while active.count < connections, let segment = nextSegment() {
            opened.append(segment)
        }
        return opened
    }

    private mutating func nextSegment() -> Segment? {
        guard !pending.isEmpty else { return steal() }
        let range = pending.removeFirst()
        let end = pieceEnd(from: range.start, limit: range.end)
        // The rest of the range goes back in front: the next piece is the one after this.
        if end < range.end { pending.insert(PieceMap.Range(end, range.end), at: 0) }
        return open(PieceMap.Range(range.start, end))
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
