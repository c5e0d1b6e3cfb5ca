/// Values by an id the agent hands out (a job's id, an easy handle's key), kept in one dense array:
/// a `SlotTable` finds an id's position with one multiplication, where `Dictionary<Int, _>` ran
/// SipHash on each of the ~20 lookups of a small job (issue 34), and walking the values walks an
/// array. A removal moves the last value into the hole, so the order of `values` is not kept.
struct IDTable<Value> {
    private var positions = SlotTable<Int>()
    private(set) var ids: [Int] = []
    private(set) var values: [Value] = []

    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }

    subscript(id: Int) -> Value? {
        get { positions[id].map { values[$0] } }
        set {
            if let newValue {
                if let position = positions[id] {
                    values[position] = newValue
                } else {
                    positions[id] = values.count
                    ids.append(id)
                    values.append(newValue)
                }
            } else {
                removeValue(forID: id)
            }
        }
    }

    /// The value under `id`, removed; the last value takes its position.
    @discardableResult
    mutating func removeValue(forID id: Int) -> Value? {
        guard let position = positions.remove(id) else { return nil }
        let last = values.count - 1
        if position != last {
            values.swapAt(position, last)
            ids.swapAt(position, last)
            positions[ids[position]] = position
        }
        ids.removeLast()
        return values.removeLast()
    }

    mutating func removeAll() {
        self = IDTable()
    }
}
