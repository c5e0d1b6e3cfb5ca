/// The run queue: which download starts next. Pure and deterministic — no I/O, time is passed in.
///
/// Order: higher priority first; among equal priority, arrival order (`fifo`) or its reverse (`lifo`);
/// among equal arrival, claimed jobs' downloads before unclaimed inbox jobs. Units waiting for a retry sit aside until due and then keep their original place.
///
/// Ready units are kept in one queue per class and host (a lane). The head of each lane stands for
/// it in its class's queue of lanes, and the head of each class for the class in the queue of
/// classes. A limit that refuses a lane's head refuses the whole lane (`per_host`) or class
/// (`max_active`), which is set aside for the rest of the decision with one heap operation: a
/// decision costs O(log n) for each host or class that is full right now — at most the hosts of
/// the running downloads, and the classes — and nothing for the units queued behind a refused head.
struct Scheduler {
    struct Unit: Hashable, Sendable, SlotKey {
        var job: Int
        var download: Int

        /// The `download` of an unclaimed inbox job: it is claimed when chosen, then its downloads queue.
        static let wholeJob = -1

        /// One word hashed, not two, the same the scheduler's own tables use (`SlotTable`).
        func hash(into hasher: inout Hasher) {
            hasher.combine(slotBits)
        }

        var slotBits: UInt64 { UInt64(truncatingIfNeeded: job &<< 16 ^ download) }
        static let vacant = Unit(job: .min, download: .min)
    }

    struct Entry: Sendable, Equatable {
        var unit: Unit
        var priority: Int
        /// Monotonic arrival sequence of the job.
        var arrival: Int
        var host: String
        var className: String = "default"
    }

    /// A ready unit inside its lane, which holds its host and class once for all its units.
    private struct Item {
        var unit: Unit
        var priority: Int
        var arrival: Int

        init(_ entry: Entry) {
            (unit, priority, arrival) = (entry.unit, entry.priority, entry.arrival)
        }
    }

    private struct Lane: Hashable {
        var className: String
        var host: String
    }

    /// The first unit of a lane, as its class's queue of lanes and the queue of classes hold it.
    private struct Head {
        var lane: Int32
        var item: Item
    }

    private typealias LaneQueue = PriorityHeap<LaneOrder>
    private typealias ClassQueue = PriorityHeap<ClassOrder>

    private(set) var order: Config.Order
    /// Lanes by id, each with its class's id; a lane's id is released when it runs empty and reused.
    private var lanes: [(lane: Lane, classID: Int32, queue: LaneQueue?)] = []
    private var laneIDs: [Lane: Int32] = [:]
    /// The lane looked up last: a queue of many jobs of one host and class asks for the same
    /// lane for each, and two short names compare for less than a hash of both.
    private var lastLane: (lane: Lane, id: Int32)?
    private var freeLaneIDs: [Int32] = []
    /// For each class by id: the heads of its lanes, nil while it has no ready unit. A class name
    /// is looked up once, when a lane of it is made, and its id kept (the config names few
    /// classes; a reload builds the scheduler anew).
    private var classes: [ClassQueue?] = []
    private var classIDs: [String: Int32] = [:]
    /// The head of each class with ready units, by class id.
    private var top: PriorityHeap<TopOrder>
    private var waiting: PriorityHeap<WaitingOrder>
    /// Where each queued unit is: the id of its lane, or `Scheduler.waitingLane`.
    private var places = SlotTable<Unit>()
    /// Jobs with queued units past their first download: how many, and the highest index (for
    /// `remove(job:)`, which looks each one up).
    private var laterDownloads: [Int: (count: Int, highest: Int)] = [:]
    private static let waitingLane: Int32 = -1

    private(set) var readyCount = 0
    /// Heap operations (push, pop, removal, re-ordering) done so far: the work of the queue.
    private(set) var heapOperations = 0
    /// Times a `nextRunnable` predicate was asked about a unit.
    private(set) var probes = 0

    init(order: Config.Order = .fifo) {
        self.order = order
        top = Scheduler.topQueue(order)
        waiting = Scheduler.waitingQueue(order)
    }

    var waitingCount: Int { waiting.count }
    var isEmpty: Bool { readyCount == 0 && waiting.isEmpty }

    /// The run order of two ready units: higher priority, then arrival (`fifo` or `lifo`), then a
    /// claimed job's download before an unclaimed inbox job, then download and job.
    private struct ItemOrder {
        let fifo: Bool

        init(_ order: Config.Order) { fifo = order == .fifo }

        func precedes(_ a: Item, _ b: Item) -> Bool {
            if a.priority != b.priority { return a.priority > b.priority }
            if a.arrival != b.arrival { return fifo ? a.arrival < b.arrival : a.arrival > b.arrival }
            // A job claimed to run goes before the inbox jobs that arrived with it: else a batch
            // written within one mtime tick would be claimed whole before any of it starts.
            let (aClaimed, bClaimed) = (a.unit.download != Unit.wholeJob, b.unit.download != Unit.wholeJob)
            if aClaimed != bClaimed { return aClaimed }
            if a.unit.download != b.unit.download { return a.unit.download < b.unit.download }
            return fifo ? a.unit.job < b.unit.job : a.unit.job > b.unit.job
        }
    }

    /// A lane's units, by unit.
    private struct LaneOrder: HeapOrder {
        let items: ItemOrder
        func key(of element: Item) -> Unit { element.unit }
        func precedes(_ a: Item, _ b: Item) -> Bool { items.precedes(a, b) }
    }

    /// A class's lanes by their heads, by lane id.
    private struct ClassOrder: HeapOrder {
        let items: ItemOrder
        func key(of element: Head) -> Int32 { element.lane }
        func precedes(_ a: Head, _ b: Head) -> Bool { items.precedes(a.item, b.item) }
    }

    /// The classes by their heads, by class id.
    private struct TopOrder: HeapOrder {
        let items: ItemOrder
        func key(of element: (classID: Int32, head: Head)) -> Int32 { element.classID }
        func precedes(_ a: (classID: Int32, head: Head), _ b: (classID: Int32, head: Head)) -> Bool {
            items.precedes(a.head.item, b.head.item)
        }
    }

    /// Units waiting for a retry: the soonest due first, then in run order.
    private struct WaitingOrder: HeapOrder {
        let items: ItemOrder
        func key(of element: (entry: Entry, due: Int64)) -> Unit { element.entry.unit }
        func precedes(_ a: (entry: Entry, due: Int64), _ b: (entry: Entry, due: Int64)) -> Bool {
            a.due != b.due ? a.due < b.due : items.precedes(Item(a.entry), Item(b.entry))
        }
    }

    private static func topQueue(_ order: Config.Order) -> PriorityHeap<TopOrder> {
        PriorityHeap(TopOrder(items: ItemOrder(order)))
    }

    private static func waitingQueue(_ order: Config.Order) -> PriorityHeap<WaitingOrder> {
        PriorityHeap(WaitingOrder(items: ItemOrder(order)))
    }

    /// Room for `additional` more queued units (a scan that finds thousands of job files): the
    /// index of where each unit is grows once instead of doubling, each doubling in fresh pages.
    mutating func reserveCapacity(_ additional: Int) {
        places.reserveCapacity(places.count + additional)
    }

    /// Queues a unit to start as soon as the limits allow; one already queued is replaced.
    mutating func enqueue(_ entry: Entry) {
        removeUnit(entry.unit)
        insertReady(entry)
    }

    /// Sets a unit aside until `due` (milliseconds on the caller's clock); one already queued is replaced.
    mutating func enqueue(_ entry: Entry, due: Int64) {
        removeUnit(entry.unit)
        waiting.push((entry, due))
        heapOperations += 1
        place(entry.unit, in: Scheduler.waitingLane)
    }

    /// Moves units whose time has come back into the ready queue.
    mutating func promote(now: Int64) {
        while let next = waiting.first, next.due <= now {
            waiting.pop()
            heapOperations += 1
            unplace(next.entry.unit)
            insertReady(next.entry)
        }
    }

    /// Moves the waiting units `matches` picks back into the ready queue at once (O(n)).
    mutating func promote(where matches: (Entry) -> Bool) {
        for (entry, _) in waiting.elements where matches(entry) {
            removeUnit(entry.unit)
            insertReady(entry)
        }
    }

    /// The earliest due time of a waiting unit.
    var nextDue: Int64? { waiting.first?.due }

    /// Removes and returns the first ready unit that `canStart` admits; units it refuses keep
    /// their place and do not block the ones behind them. `canStart` must decide by the entry's
    /// host and class alone (as `Admission` does): a refusal sets aside that host's lane of that class.
    mutating func nextRunnable(now: Int64, canStart: (Entry) -> Bool) -> Entry? {
        nextRunnable(now: now) { canStart($0) ? nil : .host }
    }

    /// The first ready unit `admission` lets start: a full host or class is set aside whole.
    mutating func nextRunnable(now: Int64, admission: Admission) -> Entry? {
        nextRunnable(now: now) { admission.refusal(host: $0.host, className: $0.className) }
    }

    /// Removes and returns the first ready unit for which `refusal` is nil. A refusal names what
    /// is full, and everything it holds back is passed over without being looked at.
    mutating func nextRunnable(now: Int64, refusal: (Entry) -> Admission.Refusal?) -> Entry? {
        promote(now: now)
        var asideLanes: [Int32] = []
        var asideClasses: [Int32] = []
        defer { if !asideLanes.isEmpty || !asideClasses.isEmpty { restore(lanes: asideLanes, classes: asideClasses) } }
        while let first = top.first {
            let (classID, head) = (first.classID, first.head)
            let entry = makeEntry(head.item, lane: head.lane)
            probes += 1
            switch refusal(entry) {
            case nil:
                lanes[Int(head.lane)].queue!.pop()
                heapOperations += 1
                unplace(head.item.unit)
                readyCount -= 1
                refreshHead(of: head.lane)
                return entry
            case .total:
                return nil
            case .jobClass:
                // The last class: nothing else can start, and nothing need be set aside and put back.
                if top.count == 1 { return nil }
                top.pop()
                heapOperations += 1
                asideClasses.append(classID)
            case .host:
                // The last lane of the last class (one host and class under per_host): likewise.
                if top.count == 1, classes[Int(classID)]!.count == 1 { return nil }
                classes[Int(classID)]!.pop()
                heapOperations += 1
                asideLanes.append(head.lane)
                refreshTop(classID)
            }
        }
        return nil
    }

    /// Forgets every unit of a job (cancelled or moved away).
    mutating func remove(job: Int) {
        removeUnit(Unit(job: job, download: Unit.wholeJob))
        removeUnit(Unit(job: job, download: 0))
        guard let later = laterDownloads[job] else { return }
        for download in 1...later.highest { removeUnit(Unit(job: job, download: download)) }
    }

    /// Forgets every unit `matches` picks (O(n)).
    mutating func remove(where matches: (Entry) -> Bool) {
        for entry in allEntries().map(\.entry) where matches(entry) { removeUnit(entry.unit) }
    }

    /// Re-sorts every unit after a config reload: a new order, and each entry updated in place
    /// (its class and priority looked up afresh).
    mutating func rebuild(order newOrder: Config.Order, update: (inout Entry) -> Void) {
        let entries = allEntries()
        let (operations, asked) = (heapOperations, probes)
        self = Scheduler(order: newOrder)
        (heapOperations, probes) = (operations, asked)
        for queued in entries {
            var entry = queued.entry
            update(&entry)
            if let due = queued.due { enqueue(entry, due: due) } else { enqueue(entry) }
        }
    }

    // MARK: - Lanes

    /// Every queued unit, with its due time when it waits (lanes in id order, each in heap order).
    private func allEntries() -> [(entry: Entry, due: Int64?)] {
        var found: [(entry: Entry, due: Int64?)] = []
        found.reserveCapacity(readyCount + waiting.count)
        for (id, slot) in lanes.enumerated() {
            for item in slot.queue?.elements ?? [] { found.append((makeEntry(item, lane: Int32(id)), nil)) }
        }
        for (entry, due) in waiting.elements { found.append((entry, due)) }
        return found
    }

    private func makeEntry(_ item: Item, lane id: Int32) -> Entry {
        let lane = lanes[Int(id)].lane
        return Entry(unit: item.unit, priority: item.priority, arrival: item.arrival, host: lane.host,
                     className: lane.className)
    }

    private mutating func insertReady(_ entry: Entry) {
        let id = laneID(Lane(className: entry.className, host: entry.host))
        lanes[Int(id)].queue!.push(Item(entry))
        heapOperations += 1
        place(entry.unit, in: id)
        readyCount += 1
        refreshHead(of: id)
    }

    private mutating func removeUnit(_ unit: Unit) {
        guard let place = places[unit] else { return }
        let id = Int32(truncatingIfNeeded: place)
        unplace(unit)
        if id == Scheduler.waitingLane {
            waiting.remove(unit)
            heapOperations += 1
            return
        }
        lanes[Int(id)].queue!.remove(unit)
        heapOperations += 1
        readyCount -= 1
        refreshHead(of: id)
    }

    private mutating func laneID(_ lane: Lane) -> Int32 {
        if let lastLane, lastLane.lane == lane { return lastLane.id }
        if let id = laneIDs[lane] {
            lastLane = (lane, id)
            return id
        }
        let queue = LaneQueue(LaneOrder(items: ItemOrder(order)))
        let classID = classID(lane.className)
        let id: Int32
        if let free = freeLaneIDs.popLast() {
            id = free
            lanes[Int(id)] = (lane, classID, queue)
        } else {
            id = Int32(lanes.count)
            lanes.append((lane, classID, queue))
        }
        laneIDs[lane] = id
        lastLane = (lane, id)
        return id
    }

    private mutating func classID(_ name: String) -> Int32 {
        if let id = classIDs[name] { return id }
        let id = Int32(classes.count)
        classes.append(nil)
        classIDs[name] = id
        return id
    }

    /// After a lane's first unit changed: its place in its class follows; an empty lane is released.
    private mutating func refreshHead(of id: Int32) {
        let classID = lanes[Int(id)].classID
        let slot = Int(classID)
        if let first = lanes[Int(id)].queue!.first {
            if classes[slot]?[id]?.item.unit != first.unit {
                if classes[slot] == nil { classes[slot] = classQueue() }
                classes[slot]!.push(Head(lane: id, item: first))
                heapOperations += 1
            }
        } else {
            if classes[slot]?.remove(id) != nil { heapOperations += 1 }
            laneIDs[lanes[Int(id)].lane] = nil
            if lastLane?.id == id { lastLane = nil }
            lanes[Int(id)].queue = nil
            freeLaneIDs.append(id)
        }
        refreshTop(classID)
    }

    /// After a class's first lane changed: its place among the classes follows.
    private mutating func refreshTop(_ classID: Int32) {
        if let first = classes[Int(classID)]?.first {
            if let current = top[classID], current.head.lane == first.lane, current.head.item.unit == first.item.unit {
                return
            }
            top.push((classID, first))
            heapOperations += 1
        } else {
            classes[Int(classID)] = nil
            if top.remove(classID) != nil { heapOperations += 1 }
        }
    }

    /// Puts back what a decision set aside.
    private mutating func restore(lanes aside: [Int32], classes asideClasses: [Int32]) {
        var touched = asideClasses
        for id in aside {
            let classID = lanes[Int(id)].classID
            let slot = Int(classID)
            if classes[slot] == nil { classes[slot] = classQueue() }
            classes[slot]!.push(Head(lane: id, item: lanes[Int(id)].queue!.first!))
            heapOperations += 1
            touched.append(classID)
        }
        // Each class once, in id order (a set's order was arbitrary and the result is the same).
        touched.sort()
        for (index, classID) in touched.enumerated() where index == 0 || touched[index - 1] != classID {
            refreshTop(classID)
        }
    }

    private func classQueue() -> ClassQueue {
        ClassQueue(ClassOrder(items: ItemOrder(order)))
    }

    private mutating func place(_ unit: Unit, in id: Int32) {
        places[unit] = Int(id)
        if unit.download > 0 {
            let later = laterDownloads[unit.job] ?? (0, 0)
            laterDownloads[unit.job] = (later.count + 1, max(later.highest, unit.download))
        }
    }

    private mutating func unplace(_ unit: Unit) {
        places[unit] = nil
        if unit.download > 0, let later = laterDownloads[unit.job] {
            laterDownloads[unit.job] = later.count > 1 ? (later.count - 1, later.highest) : nil
        }
    }
}
