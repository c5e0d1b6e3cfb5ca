/// A binary min-heap under a caller-given order: O(log n) push and pop, so a spool of 100,000
/// jobs is queued without quadratic costs.
struct PriorityHeap<Element> {
    private var storage: [Element] = []
    /// True when the first argument must come out before the second.
    private let precedes: (Element, Element) -> Bool

    init(precedes: @escaping (Element, Element) -> Bool) {
        self.precedes = precedes
    }

    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }
    var first: Element? { storage.first }
    var elements: [Element] { storage }

    mutating func push(_ element: Element) {
        storage.append(element)
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(storage[child], storage[parent]) else { break }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    mutating func pop() -> Element? {
        guard !storage.isEmpty else { return nil }
        storage.swapAt(0, storage.count - 1)
        let top = storage.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var best = parent
            if left < storage.count, precedes(storage[left], storage[best]) { best = left }
            if right < storage.count, precedes(storage[right], storage[best]) { best = right }
            if best == parent { break }
            storage.swapAt(parent, best)
            parent = best
        }
        return top
    }

    /// Keeps only the elements for which `keep` is true (O(n log n)).
    mutating func filter(_ keep: (Element) -> Bool) {
        let kept = storage.filter(keep)
        storage = []
        for element in kept { push(element) }
    }
}
