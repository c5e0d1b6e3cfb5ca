/// A key of the scheduler's tables: ids the agent hands out (jobs, lanes, classes), never a value
/// a job file chooses, so one multiplication spreads them as well as `Hasher`'s SipHash would.
protocol SlotKey: Equatable {
    /// Equal keys give equal bits; unequal keys may too (they are then told apart by `==`).
    var slotBits: UInt64 { get }
    /// A value no key has: it marks an empty bucket (an Optional key took a word more with alignment).
    static var vacant: Self { get }
}

extension Int: SlotKey {
    var slotBits: UInt64 { UInt64(truncatingIfNeeded: self) }
    static var vacant: Int { .min }
}

extension Int32: SlotKey {
    var slotBits: UInt64 { UInt64(truncatingIfNeeded: self) }
    static var vacant: Int32 { .min }
}

/// Key → Int with open addressing: linear probing from a Fibonacci hash, deletion by backward
/// shift (no tombstones). The heaps record an element's slot at every level of a sift, and a
/// `Dictionary`'s SipHash cost more than the sift itself (issue 34: ~30 lookups a small job).
struct SlotTable<Key: SlotKey> {
    /// `Key.vacant` in the empty buckets.
    private var keys: [Key] = []
    private var values: [Int] = []
    private(set) var count = 0
    /// 64 minus log2 of the capacity: the top bits of the product pick the bucket.
    private var shift: UInt64 = 64

    var isEmpty: Bool { count == 0 }

    subscript(key: Key) -> Int? {
        get {
            let found = find(key)
            return found.present ? values[found.index] : nil
        }
        set {
            if let newValue { set(key, newValue) } else { remove(key) }
        }
    }

    /// Room for `capacity` keys without growing.
    mutating func reserveCapacity(_ capacity: Int) {
        var buckets = max(16, keys.count)
        while capacity * 4 > buckets * 3 { buckets *= 2 }
        if buckets > keys.count { rehash(buckets) }
    }

    mutating func removeAll() {
        self = SlotTable()
    }

    @discardableResult
    mutating func remove(_ key: Key) -> Int? {
        let found = find(key)
        guard found.present else { return nil }
        let value = values[found.index]
        let mask = keys.count - 1
        // Each later key of the run moves back into the hole unless its bucket lies after the
        // hole (cyclically, up to where it sits): every key stays reachable from its bucket.
        var hole = found.index
        var next = (hole + 1) & mask
        while keys[next] != Key.vacant {
            let moving = keys[next]
            let home = bucket(moving)
            let staysPut = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !staysPut {
                keys[hole] = moving
                values[hole] = values[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        keys[hole] = Key.vacant
        count -= 1
        return value
    }

    private mutating func set(_ key: Key, _ value: Int) {
        precondition(key != Key.vacant, "SlotTable: the vacant key is not a key")
        if (count + 1) * 4 > keys.count * 3 { rehash(max(16, keys.count * 2)) }
        let found = find(key)
        if !found.present {
            keys[found.index] = key
            count += 1
        }
        values[found.index] = value
    }

    /// Where `key` is, or the empty bucket where it would go.
    private func find(_ key: Key) -> (index: Int, present: Bool) {
        guard !keys.isEmpty else { return (0, false) }
        let mask = keys.count - 1
        var index = bucket(key)
        while keys[index] != Key.vacant {
            if keys[index] == key { return (index, true) }
            index = (index + 1) & mask
        }
        return (index, false)
    }

    private func bucket(_ key: Key) -> Int {
        Int(truncatingIfNeeded: (key.slotBits &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    private mutating func rehash(_ buckets: Int) {
        let (oldKeys, oldValues) = (keys, values)
        keys = Array(repeating: Key.vacant, count: buckets)
        values = Array(repeating: 0, count: buckets)
        shift = UInt64(64 - buckets.trailingZeroBitCount)
        count = 0
        for (index, key) in oldKeys.enumerated() where key != Key.vacant {
            set(key, oldValues[index])
        }
    }
}
