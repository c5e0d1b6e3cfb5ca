extension TestHTTPServer {
    /// A file the server answers for one path, with its validators.
    struct ServedFile: Sendable {
        var body: [UInt8]
        var etag: String?
        var lastModified: String?
    }

    /// Everything the server threads share; it lives in the engine's `Locked`.
    struct State: Sendable {
        var files: [String: ServedFile] = [:]
        var faults: [String: [ArmedFault]] = [:]
        var log: [LoggedRequest] = []
        var nextRequestID = 1
        var inFlight = 0
        var peakInFlight = 0
        var acceptedConnections = 0
        var nextConnectionID = 1
        /// Open connection sockets by connection id, so `stop()` can shut them down.
        var connections: [Int: Int32] = [:]
        /// Accept and connection threads still running.
        var liveThreads = 0
        var stopped = false
        var listenerClosed = false

        /// The key the target is served under: the whole target when served so, else its path.
        func key(target: String, path: String) -> String {
            files[target] != nil || faults[target] != nil ? target : path
        }

        /// The file as it is now and the faults that shape this request's answer, spending `.times`
        /// counts only on faults that took effect, then applying a `changeETagAfterFirstRequest`.
        mutating func takePlan(for key: String) -> (FaultPlan, ServedFile?) {
            var plan = FaultPlan()
            let file = files[key]
            guard var armed = faults[key] else { return (plan, file) }
            let active = armed.indices.filter { armed[$0].remaining != 0 }
            let replacement = active.first { armed[$0].fault.role == .replacement }
            let answersFromFile = replacement == nil && file != nil
            for index in active {
                switch armed[index].fault.role {
                case .modifier: break
                case .replacement: guard index == replacement else { continue }
                case .fileOnly: guard answersFromFile else { continue }
                }
                if let remaining = armed[index].remaining { armed[index].remaining = remaining - 1 }
                if case .changeETagAfterFirstRequest(let etag, let lastModified, let body) = armed[index].fault {
                    armed[index].remaining = 0
                    files[key]?.etag = etag
                    if let lastModified { files[key]?.lastModified = lastModified }
                    if let body { files[key]?.body = body }
                } else {
                    plan.add(armed[index].fault)
                }
            }
            faults[key] = armed
            return (plan, file)
        }

        /// Logs a newly parsed request and counts it as in flight.
        mutating func begin(_ head: RequestHead, connectionID: Int, peer: Address, local: Address) -> Int {
            let id = nextRequestID
            nextRequestID += 1
            log.append(LoggedRequest(
                id: id, connectionID: connectionID, method: head.method, target: head.target,
                path: head.path, version: head.version, headers: head.headers,
                peer: peer, local: local, received: .now))
            inFlight += 1
            peakInFlight = max(peakInFlight, inFlight)
            return id
        }

        /// Changes the log entry of request `id`, unless `resetStats()` dropped it.
        mutating func update(_ id: Int, _ change: (inout LoggedRequest) -> Void) {
            guard let index = log.lastIndex(where: { $0.id == id }) else { return }
            change(&log[index])
        }

        /// Stops counting a request as in flight.
        mutating func leaveInFlight() {
            inFlight -= 1
        }

        /// Marks request `id` finished: its answer is complete or abandoned.
        mutating func end(_ id: Int) {
            update(id) { $0.finished = .now }
        }
    }
}
