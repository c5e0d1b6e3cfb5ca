/// One download fetched over several connections (issue 26): its `SegmentPlan`, one segment
/// `Transfer` per running segment, work stealing when one ends, and the stop of all of them when
/// a segment's answer shows another file. The caller adds and removes the easy handles.
final class SegmentedDownload {
    private(set) var plan: SegmentPlan
    let part: PartFile
    /// The URL the first response came from (after redirects), with the job's network settings.
    let request: TransferRequest
    let validator: String
    /// Connections it may still use: each failed segment gives one up, so a server that refuses
    /// extra connections is not asked again and again.
    private(set) var connections: Int
    /// Running segments by easy-handle key.
    private(set) var running: [Int: (window: SegmentWindow, transfer: Transfer)] = [:]
    /// Why the download must restart on one connection (a segment showed another file); nil while it may go on.
    private(set) var restartReason: String?
    /// Segment failures (network, HTTP errors), each closing its segment; the rest go on.
    private(set) var failures: [TransferFailure] = []

    init(request: TransferRequest, part: PartFile, map: PieceMap, validator: String, connections: Int, minSize: Int64) {
        self.request = request
        self.part = part
        self.validator = validator
        self.connections = max(1, connections)
        plan = SegmentPlan(map: map, minSize: minSize)
    }

    var isComplete: Bool { plan.isComplete }
    /// Nothing runs and bytes are missing: every connection failed, the attempt has failed.
    var isStuck: Bool { running.isEmpty && !plan.isComplete }
    var transfers: [Transfer] { running.values.map(\.transfer) }

    /// Opens segments until `connections` run (or nothing is left to split); returns the new transfers.
    func fill() throws -> [Transfer] {
        guard restartReason == nil else { return [] }
        let segments = plan.fill(connections: connections)
        // Work stealing shrank the segments it split: their transfers stop at the new end.
        for entry in running.values {
            if let end = plan.active[entry.window.id]?.end, end < entry.window.end { entry.window.end = end }
        }
        var opened: [Transfer] = []
        for segment in segments {
            let window = SegmentWindow(id: segment.id, start: segment.next, end: segment.end,
                                       total: plan.map.total, validator: validator)
            window.wrote = { [unowned self] range in plan.wrote(range.count, for: window.id) }
            let transfer = try Transfer(request, segment: window, part: part)
            running[transfer.easy.key] = (window, transfer)
            opened.append(transfer)
        }
        return opened
    }

    /// A segment's transfer ended with `outcome`: a completed or failed one frees its connection
    /// for the next piece (work stealing); a restart stops every segment. Returns the transfers to start.
    func ended(key: Int, _ outcome: TransferOutcome) throws -> [Transfer] {
        guard let (window, _) = running.removeValue(forKey: key) else { return [] }
        plan.close(window.id)
        switch outcome {
        case .completed: break
        case .restart(let reason): restartReason = reason
        case .failed(let failure):
            failures.append(failure)
            connections -= 1
        case .redirect(_, let status):
            restartReason = "HTTP \(status) redirect to a segment's Range request"
        }
        return try fill()
    }

    /// Ends every running segment (the caller removes their handles first); returns them.
    func stopAll() -> [Transfer] {
        let stopped = running.values.map(\.transfer)
        for (window, _) in running.values { plan.close(window.id) }
        running.removeAll()
        return stopped
    }
}
