/// The byte ranges of a file that are on disk, for a download written out of order by several
/// connections (issue 26): sorted, disjoint and merged, so that what is missing is exact.
struct PieceMap: Sendable, Equatable, Codable {
    /// A half-open byte range `[start, end)`; on disk as `[start, end]` in the resume record.
    struct Range: Sendable, Equatable, Hashable, Codable {
        var start: Int64
        var end: Int64
        init(_ start: Int64, _ end: Int64) {
            self.start = start
            self.end = end
        }
        var count: Int64 { end - start }

        init(from decoder: Decoder) throws {
            var container = try decoder.unkeyedContainer()
            start = try container.decode(Int64.self)
            end = try container.decode(Int64.self)
            guard start >= 0, end > start else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a byte range")
            }
        }

        func encode(to encoder: Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(start)
            try container.encode(end)
        }
    }

    /// The complete size of the file.
    let total: Int64
    /// Ranges on disk, in order, neither overlapping nor touching.
    private(set) var done: [Range] = []

    init(total: Int64, done: [Range] = []) {
        self.total = total
        for range in done { add(range) }
    }

    /// Marks `range` as on disk (clipped to the file), merging it with its neighbours.
    mutating func add(_ range: Range) {
        let clipped = Range(max(0, range.start), min(total, range.end))
        guard clipped.count > 0 else { return }
        var merged = clipped
        var kept: [Range] = []
        kept.reserveCapacity(done.count + 1)
        for existing in done {
            if existing.end < merged.start || existing.start > merged.end {
                kept.append(existing)
            } else {
                merged = Range(min(existing.start, merged.start), max(existing.end, merged.end))
            }
        }
        let index = kept.firstIndex { $0.start > merged.start } ?? kept.endIndex
        kept.insert(merged, at: index)
        done = kept
    }

    /// The ranges still to fetch, in order.
    var missing: [Range] {
        var gaps: [Range] = []
        var next: Int64 = 0
        for range in done {
            if range.start > next { gaps.append(Range(next, range.start)) }
            next = range.end
        }
        if next < total { gaps.append(Range(next, total)) }
        return gaps
    }

    var doneBytes: Int64 { done.reduce(0) { $0 + $1.count } }
    var isComplete: Bool { done == [Range(0, total)] || total == 0 }
    /// Bytes on disk from byte 0 without a gap: what a one-connection restart may resume from.
    var prefix: Int64 { done.first.map { $0.start == 0 ? $0.end : 0 } ?? 0 }

    /// Only the parts of this map that `other` has too (the pieces both vouch for).
    func intersection(_ other: PieceMap) -> PieceMap {
        var result = PieceMap(total: total)
        for mine in done {
            for theirs in other.done where theirs.end > mine.start && theirs.start < mine.end {
                result.add(Range(max(mine.start, theirs.start), min(mine.end, theirs.end)))
            }
        }
        return result
    }
}
