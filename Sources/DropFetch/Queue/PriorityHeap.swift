/// The order of a `PriorityHeap`'s elements and the key each is found by, as a type: the sifts
/// call it directly, where closures were called through a thunk (about 40 comparisons a small job).
protocol HeapOrder {
    associatedtype Key: SlotKey
    associatedtype Element
    func key(of element: Element) -> Key
    /// True when `a` must come out before `b`.
    func precedes(_ a: Element, _ b: Element) -> Bool
}

/// A 4-ary min-heap under a caller-given order, with an index map from each element's key to its
/// slot: push, pop, removal and re-ordering by key are all O(log n), so a spool of 100,000 jobs is
/// queued and pruned without quadratic costs. A key is in the heap at most once.
struct PriorityHeap<Order: HeapOrder> {
    typealias Key = Order.Key
    typealias Element = Order.Element
    private var storage: [Element] = []
    private var slots = SlotTable<Key>()
    private let order: Order
    /// Calls of `precedes` so far: the work done, for tests that check a bound on it.
    private(set) var comparisons = 0
    /// Children per node: half the levels of a binary heap, so half the index map's writes a sift,
    /// for the same comparisons (three among the children, one with the element).
    private static var arity: Int { 4 }

    init(_ order: Order) {
        self.order = order
    }

    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }
    var first: Element? { storage.first }
    /// In heap order, not sorted.
    var elements: [Element] { storage }

    func contains(_ key: Key) -> Bool { slots[key] != nil }

    subscript(key: Key) -> Element? { slots[key].map { storage[$0] } }

    /// Adds `element`; one already there under the same key is replaced.
    mutating func push(_ element: Element) {
        if let slot = slots[order.key(of: element)] {
            storage[slot] = element
            restore(slot)
            return
        }
        storage.append(element)
        siftUp(storage.count - 1)
    }

    @discardableResult
    mutating func pop() -> Element? {
        guard !storage.isEmpty else { return nil }
        return take(0)
    }

    /// Removes and returns the element under `key`, if there is one.
    @discardableResult
    mutating func remove(_ key: Key) -> Element? {
        guard let slot = slots[key] else { return nil }
        return take(slot)
    }

    /// Keeps only the elements for which `keep` is true (O(n log n)).
    mutating func filter(_ keep: (Element) -> Bool) {
        let kept = storage.filter(keep)
        storage = []
        slots.removeAll()
        for element in kept { push(element) }
    }

    /// Takes the element at `slot` out; the last element fills its place and moves to where the order puts it.
    private mutating func take(_ slot: Int) -> Element {
        let last = storage.removeLast()
        guard slot < storage.count else {
            slots[order.key(of: last)] = nil
            return last
        }
        let element = storage[slot]
        slots[order.key(of: element)] = nil
        storage[slot] = last
        restore(slot)
        return element
    }

    /// Moves the element at `slot` up or down to where the order puts it, and records its slot.
    private mutating func restore(_ slot: Int) {
        if slot > 0, before(slot, (slot - 1) / PriorityHeap.arity) { siftUp(slot) } else { siftDown(slot) }
    }

    // The sifts move a hole, not the element: each element passed over is written (and its slot
    // recorded) once, the moving one once at the end — half the index map's writes of swapping.

    private mutating func siftUp(_ start: Int) {
        let moving = storage[start]
        var child = start
        while child > 0 {
            let parent = (child - 1) / PriorityHeap.arity
            guard counted(moving, precedes: storage[parent]) else { break }
            place(storage[parent], at: child)
            child = parent
        }
        place(moving, at: child)
    }

    private mutating func siftDown(_ start: Int) {
        let moving = storage[start]
        var hole = start
        while true {
            let first = PriorityHeap.arity * hole + 1
            guard first < storage.count else { break }
            var best = first
            for child in (first + 1)..<min(first + PriorityHeap.arity, storage.count) where before(child, best) {
                best = child
            }
            guard counted(storage[best], precedes: moving) else { break }
            place(storage[best], at: hole)
            hole = best
        }
        place(moving, at: hole)
    }

    private mutating func place(_ element: Element, at slot: Int) {
        storage[slot] = element
        slots[order.key(of: element)] = slot
    }

    private mutating func counted(_ a: Element, precedes b: Element) -> Bool {
        comparisons &+= 1
        return order.precedes(a, b)
    }

    private mutating func before(_ a: Int, _ b: Int) -> Bool {
        comparisons &+= 1
        return order.precedes(storage[a], storage[b])
    }
}
