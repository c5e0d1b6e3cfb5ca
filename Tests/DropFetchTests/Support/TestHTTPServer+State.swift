extension TestHTTPServer {
    /// A file the server answers for one path, with its validators.
    struct ServedFile: Sendable {
        var body: [UInt8]
        var etag: String?
        var lastModified: String?
    }

    /// Everything the server threads share; it lives in the engine's `Mutex`.
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

        /// The file as it is now and the faults for this request, consuming `.times` counts and
        /// applying a pending `changeETagAfterFirstRequest` after the snapshot.
        mutating func takePlan(for key: String) -> (FaultPlan, ServedFile?) {
            var plan = FaultPlan()
            let file = files[key]
            guard var armed = faults[key] else { return (plan, file) }
            for index in armed.indices where armed[index].remaining != 0 {
                if let remaining = armed[index].remaining { armed[index].remaining = remaining - 1 }
                if case .changeETagAfterFirstRequest(let etag, let lastModified, let body) = armed[index].fault {
                    armed[index].remaining = 0
                    if var changed = files[key] {
                        changed.etag = etag
                        if let lastModified { changed.lastModified = lastModified }
                        if let body { changed.body = body }
                        files[key] = changed
                    }
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

        mutating func update(_ id: Int, _ change: (inout LoggedRequest) -> Void) {
            guard let index = log.lastIndex(where: { $0.id == id }) else { return }
            change(&log[index])
        }

        mutating func end(_ id: Int) {
            inFlight -= 1
            update(id) { $0.finished = .now }
        }
    }
}
