import Glibc

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

    /// The download's first transfer: its easy-handle key names the download to the lifecycle,
    /// the bandwidth budget and the meters until every segment is over, even after it ended.
    private(set) var lead: Transfer?
    /// The digests, computed on a worker reading the file back as its prefix without a hole
    /// grows (`FileDigester`); nil when nothing needs one.
    private var digester: FileDigester?
    private let algorithms: [Checksum.Algorithm]
    private let crashPlan: CrashPlan?

    init(request: TransferRequest, part: PartFile, map: PieceMap, validator: String, connections: Int, minSize: Int64,
         crashPlan: CrashPlan? = nil) {
        self.request = request
        self.part = part
        self.validator = validator
        self.connections = max(1, connections)
        self.crashPlan = crashPlan
        algorithms = DownloadDigest.algorithms(request.digest, checksum: request.checksum?.algorithm)
        plan = SegmentPlan(map: map, minSize: minSize, connections: connections)
    }

    /// Bytes on disk (the piece map's), what progress and the meters show.
    var doneBytes: Int64 { plan.map.doneBytes }
    var total: Int64 { plan.map.total }
    /// Live connections: the running segments, the adopted first transfer among them while it runs.
    var liveConnections: Int { running.count }

    /// Takes `transfer`, the download's first connection whose open-ended response is being
    /// written at `offset`, as segment 0: it writes only up to the segment's end from now on.
    func adopt(_ transfer: Transfer, at offset: Int64) {
        let segment = plan.adoptStream(at: offset)
        let window = makeWindow(segment)
        transfer.stream = window
        transfer.group = self
        transfer.dropDigest()
        running[transfer.easy.key] = (window, transfer)
        lead = transfer
    }

    /// Starts the digests over the prefix already on disk; later writes advance them.
    func startDigest() throws(SystemError) {
        guard !algorithms.isEmpty, digester == nil else { return }
        let reader = try part.folder.open(part.name, flags: O_RDONLY | O_NONBLOCK)
        digester = try FileDigester(file: reader, algorithms: algorithms, available: plan.map.prefix)
    }

    private func makeWindow(_ segment: SegmentPlan.Segment) -> SegmentWindow {
        let window = SegmentWindow(id: segment.id, start: segment.next, end: segment.end,
                                   total: plan.map.total, validator: validator)
        window.wrote = { [unowned self] range in
            let before = plan.map.prefix
            plan.wrote(range.count, for: window.id)
            let prefix = plan.map.prefix
            if prefix > before { digester?.advance(to: prefix) }
        }
        return window
    }

    var isComplete: Bool { plan.isComplete }
    /// Nothing runs and bytes are missing: every connection failed, the attempt has failed.
    var isStuck: Bool { running.isEmpty && !plan.isComplete }
    var transfers: [Transfer] { running.values.map(\.transfer) }

    /// Opens segments until `connections` run, at most `limit` new ones (what the host and class
    /// may still have), or nothing is left to split; returns the new transfers.
    func fill(limit: Int = .max) throws -> [Transfer] {
        guard restartReason == nil, limit > 0 else { return [] }
        let segments = plan.fill(connections: min(connections, running.count + min(limit, connections)))
        // Work stealing shrank the segments it split: their transfers stop at the new end.
        for entry in running.values {
            if let end = plan.active[entry.window.id]?.end, end < entry.window.end { entry.window.end = end }
        }
        var opened: [Transfer] = []
        for planned in segments {
            // A later split of the same fill may have shrunk it already.
            let segment = plan.active[planned.id] ?? planned
            let window = makeWindow(segment)
            let transfer: Transfer
            do {
                transfer = try Transfer(request, segment: window, part: part, crashPlan: crashPlan)
            } catch {
                plan.close(segment.id)
                if opened.isEmpty, running.isEmpty { throw error }
                break
            }
            transfer.group = self
            running[transfer.easy.key] = (window, transfer)
            if lead == nil { lead = transfer }
            opened.append(transfer)
        }
        return opened
    }

    /// A segment's transfer ended with `outcome`: a completed or failed one frees its connection
    /// for the next piece (work stealing, at most `limit` new connections); a restart stops every
    /// segment. Returns the transfers to start.
    func ended(key: Int, _ outcome: TransferOutcome, limit: Int = .max) throws -> [Transfer] {
        guard let (window, _) = running.removeValue(forKey: key) else { return [] }
        plan.close(window.id)
        switch outcome {
        case .completed: break
        case .restart(let reason): restartReason = reason
        case .failed(let failure):
            failures.append(failure)
            connections -= 1
            // An error answer to a range request refuses the split: one connection from zero may still fetch it.
            if let status = failure.httpStatus, status >= 400 {
                restartReason = "a range request was answered with HTTP \(status)"
            }
        case .redirect(_, let status):
            restartReason = "HTTP \(status) redirect to a segment's Range request"
        }
        return try fill(limit: limit)
    }

    /// Once complete: tells the digest worker where the data ends; the descriptor to poll until
    /// the digests are ready, nil when nothing is left to wait for.
    func digestPending() -> Int32? {
        completedAt = MonotonicClock.now()
        return digester?.end(size: plan.map.total)
    }

    /// When every piece was in (monotonic ms): the log says how long the digests took after it.
    private(set) var completedAt: Int64?

    /// The result of the complete download: its digests checked against the job's `checksum=`.
    func result(httpStatus: Int?, resumedFrom: Int64, contentDisposition: String?) -> TransferOutcome {
        var digests: [Checksum.Algorithm: String] = [:]
        if let digester {
            switch digester.finish(size: plan.map.total) {
            case .success(let values): digests = values
            case .failure(let error):
                return .failed(TransferFailure(failure: Failure(.internal, error.description), httpStatus: httpStatus,
                                               retryAfter: nil, bytes: doneBytes, resumedFrom: resumedFrom))
            }
        }
        if let checksum = request.checksum, digests[checksum.algorithm] != checksum.hex {
            return .failed(TransferFailure(
                failure: Failure(.checksumMismatch, "\(checksum.algorithm.rawValue) is \(digests[checksum.algorithm] ?? ""), expected \(checksum.hex)"),
                httpStatus: httpStatus, retryAfter: nil, bytes: doneBytes, resumedFrom: resumedFrom))
        }
        return .completed(TransferResult(bytes: plan.map.total, sha256: request.digest == .sha256 ? digests[.sha256] : nil,
                                         httpStatus: httpStatus, resumedFrom: resumedFrom,
                                         contentDisposition: contentDisposition))
    }

    /// The failure that ends an attempt in which every connection failed.
    var lastFailure: TransferFailure? { failures.last }

    /// Ends every running segment (the caller removes their handles first); returns them.
    func stopAll() -> [Transfer] {
        let stopped = running.values.map(\.transfer)
        for (window, _) in running.values { plan.close(window.id) }
        running.removeAll()
        return stopped
    }
}
