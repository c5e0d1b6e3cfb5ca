import CCurl

/// Bandwidth limits (docs/config.md "Bandwidth") on the event loop: `bandwidth` (a
/// `BandwidthBudget`) holds a token bucket per limited transfer, the write callback of a limited
/// transfer asks it before taking bytes and pauses the transfer when its bucket is empty, and the
/// loop resumes it when the bucket has refilled. An unlimited transfer has no callback hook and
/// adds no timer.
final class BandwidthControl: AgentPart {
    let context: AgentContext
    /// Token buckets and fair shares of the bandwidth limits.
    private(set) var bandwidth = BandwidthBudget()
    /// Speeds of the running transfers and bytes per class.
    private var transferMeter = TransferMeter()
    /// The limits a `schedule:` window puts in force (`ScheduleGate`); nil: the config's.
    var limitsInForce: BandwidthBudget.Limits?
    /// Which classes' running transfers a window or a quota pauses; nil: none.
    var suspends: ((String) -> Bool)?
    /// Transfers paused by `suspends`, resumed when it lets them go.
    private var suspended: Set<Int> = []

    /// Bytes received per class since the agent started (`TransferMeter`).
    var bytesByClass: [String: Int64] { transferMeter.bytesByClass }
    /// Bytes received by all transfers since the agent started, as last metered (the status page's throughput).
    var receivedBytes: Int64 { transferMeter.bytesByClass.values.reduce(0, +) }

    init(context: AgentContext) {
        self.context = context
    }

    /// When a throttled transfer's bucket will have refilled (nil: nothing is limited).
    func nextWake(now: Int64) -> Int64? { bandwidth.nextWake(now: now) }

    /// One running download as the bandwidth code sees it: its limits hold for the sum of its
    /// connections (issue 26), which share its bucket under its first transfer's key.
    struct MeteredTransfer {
        let transfer: Transfer
        /// Its open connections: the transfer itself, or the segments of a split download.
        let connections: [Transfer]
        let className: String
        /// Its job (a class: the download's status is updated in place), and the download's index.
        let job: Job?
        let download: Int
        /// Its `max-download-limit` (at least 1K: JobFileParser refuses less).
        let ownLimit: Int64?
    }

    /// Every running transfer by easy-handle key: the only place in this file that reads the
    /// agent's transfer table.
    private func meteredTransfers() -> [Int: MeteredTransfer] {
        var result: [Int: MeteredTransfer] = [:]
        for (transfer, unit) in table.allTransfers {
            let job = table.job(unit.job)
            let ownLimit = job?.spec.downloads[unit.download].maxDownloadLimit.map { max($0, DownloadSpec.minimumDownloadLimit) }
            result[transfer.easy.key] = MeteredTransfer(transfer: transfer, connections: table.connections(ofDownload: transfer.easy.key),
                                                        className: job?.record.className ?? "default",
                                                        job: job, download: unit.download, ownLimit: ownLimit)
        }
        return result
    }

    /// Brings the budget up to date with the running transfers and the config, and gives each
    /// transfer what its limit needs. Call it whenever a transfer starts (before the next
    /// curl_multi_perform(3)) or ends (while its `Transfer` is still alive, for its last bytes),
    /// and on a config reload. While no limit is configured or in force it only meters.
    func applyRateLimits() {
        if !bandwidth.isActive, !configuresLimits, meterUnlimited() { return }
        let now = clock.now()
        let running = meteredTransfers()
        bandwidth.setLimits(limitsInForce ?? BandwidthBudget.Limits(config))
        var started: [Int] = []
        for (key, metered) in running where !transferMeter.isTracking(key, metered.transfer) {
            transferMeter.forget(key)
            bandwidth.add(key, className: metered.className, ownLimit: metered.ownLimit, now: now)
            transferMeter.track(key, metered.transfer, className: metered.className, now: now)
            started.append(key)
        }
        // Started while nothing was limited (`meterUnlimited`): budgeted from now on.
        for (key, metered) in running where !bandwidth.contains(key) {
            bandwidth.add(key, className: metered.className, ownLimit: metered.ownLimit, now: now)
        }
        for key in bandwidth.ids where running[key] == nil { bandwidth.remove(key) }
        for key in transferMeter.keys where running[key] == nil { transferMeter.forget(key) }
        bandwidth.rebalance(now: now)
        for key in started {
            guard let metered = running[key] else { continue }
            metered.job?.apply(.rate(bytesPerSecond: nil, limit: bandwidth.rateLimit(of: key)), to: metered.download)
            if let share = bandwidth.evenShare(of: key) {
                for connection in metered.connections { prepareLimited(connection.easy, share: share) }
            }
        }
        for (key, metered) in running where !suspend(metered, key: key) {
            for connection in metered.connections { hookLimit(connection, key: key, connections: metered.connections.count) }
        }
        suspended.formIntersection(running.keys)
        context.metrics?.bytesByClass = transferMeter.bytesByClass
    }

    /// A transfer of the table started (a download's first, or a redirect's next hop): while
    /// nothing is limited it is only metered, without `applyRateLimits`' walk of every transfer.
    func transferStarted(_ transfer: Transfer, className: String, ownLimit: Int64?) {
        guard (ownLimit ?? 0) <= 0, nothingLimited else { return applyRateLimits() }
        transferMeter.forget(transfer.easy.key)
        transferMeter.track(transfer.easy.key, transfer, className: className, now: clock.now())
    }

    /// The download under `key` left the table, its `Transfer` still alive for its last bytes:
    /// while nothing is limited, its bytes are counted and it is no longer metered.
    func transferEnded(key: Int) {
        guard nothingLimited else { return applyRateLimits() }
        transferMeter.forget(key)
        context.metrics?.bytesByClass = transferMeter.bytesByClass
    }

    /// No budget to keep: no transfer limited, none paused, and no limit configured or in force.
    private var nothingLimited: Bool { !bandwidth.isActive && bandwidth.isEmpty && !configuresLimits }

    /// Whether the config limits any transfers: `limits.rate_limit` or a class's `rate_limit`.
    private var configuresLimits: Bool {
        if suspends != nil || !suspended.isEmpty { return true }
        if let limitsInForce { return limitsInForce.total > 0 || !limitsInForce.perClass.isEmpty }
        return config.limits.rateLimit > 0 || config.classes.contains { ($0.rateLimit ?? 0) > 0 }
    }

    /// Pauses a transfer that `suspends` stops (its write callback refuses every byte, so libcurl
    /// pauses it keeping what it received), or resumes one it let go (curl_easy_pause(3)).
    /// True while it stays paused.
    private func suspend(_ metered: MeteredTransfer, key: Int) -> Bool {
        if suspends?(metered.className) == true {
            suspended.insert(key)
            for connection in metered.connections { connection.admit = { _ in false } }
            return true
        }
        if suspended.remove(key) != nil {
            for connection in metered.connections {
                connection.admit = nil
                _ = connection.easy.resume()
            }
        }
        return false
    }

    /// Before an extra connection of the split download under `key` sends its request: limited
    /// as the download is (`applyRateLimits` then hooks its budget check).
    func prepareConnection(_ transfer: Transfer, of key: Int) {
        if suspended.contains(key) { transfer.admit = { _ in false } }
        if let share = bandwidth.evenShare(of: key) { prepareLimited(transfer.easy, share: share) }
    }

    /// `applyRateLimits` while nothing is limited: the meter follows the transfers that started
    /// or ended, the budget is emptied, and nothing is divided. False, having changed nothing, when
    /// a transfer that started has a `max-download-limit` of its own.
    private func meterUnlimited() -> Bool {
        var started = false
        for (transfer, unit) in table.allTransfers where !transferMeter.isTracking(transfer.easy.key, transfer) {
            if let limit = table.job(unit.job)?.spec.downloads[unit.download].maxDownloadLimit, limit > 0 { return false }
            started = true
        }
        if !bandwidth.isEmpty { bandwidth = BandwidthBudget() }
        // Nothing started, and no more keys than transfers (nothing ended): the meter is as it was.
        guard started || transferMeter.count > table.runningCount else { return true }
        if started {
            let now = clock.now()
            for (transfer, unit) in table.allTransfers where !transferMeter.isTracking(transfer.easy.key, transfer) {
                transferMeter.forget(transfer.easy.key)
                transferMeter.track(transfer.easy.key, transfer, className: table.job(unit.job)?.record.className ?? "default",
                                    now: now)
            }
        }
        // Every running transfer is metered now: more keys than transfers means some ended.
        if transferMeter.count > table.runningCount {
            for key in transferMeter.keys where table.transfers(ofKey: key) == nil { transferMeter.forget(key) }
        }
        context.metrics?.bytesByClass = transferMeter.bytesByClass
        return true
    }

    /// A transfer limited from its start, before its first request: HTTP/1.1 (an HTTP/2 stream
    /// window lets the server send megabytes past a pause) and a receive buffer of about a
    /// sixteenth of a second (CURLOPT_BUFFERSIZE), so that each write is a small step of the limit.
    private func prepareLimited(_ easy: CurlEasy, share: Int64) {
        try? easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        try? easy.set(CURLOPT_BUFFERSIZE, Int(min(256 * 1024, max(1024, share / 16))))
    }

    /// Installs or removes the write callback's budget check, and keeps the low-speed limit
    /// (CURLOPT_LOW_SPEED_LIMIT) within reach of the transfer's share: a transfer that the agent
    /// holds to 20 KB/s cannot keep a 50 KB/s low-speed rule, so under a limit the rule asks for half
    /// the share it gets when every transfer wants all it can.
    private func hookLimit(_ transfer: Transfer, key: Int, connections: Int) {
        let configured = config.limits.lowSpeed.bytesPerSecond
        guard bandwidth.isLimited(key) else {
            guard transfer.admit != nil else { return }
            transfer.admit = nil
            if configured > 0 { try? transfer.easy.set(CURLOPT_LOW_SPEED_LIMIT, Int(configured)) }
            return
        }
        if transfer.admit == nil {
            transfer.admit = { [unowned self] bytes in
                self.bandwidth.admit(key, bytes: bytes, now: self.clock.now())
            }
        }
        if configured > 0, let share = bandwidth.evenShare(of: key) {
            // A split download's connections share its rate: each gets its part of the rule.
            try? transfer.easy.set(CURLOPT_LOW_SPEED_LIMIT, Int(max(1, min(configured, share / 2 / Int64(max(1, connections))))))
        }
    }

    /// After each wake, before curl_multi_perform(3): divides the limits again once a second, and
    /// resumes the paused transfers whose buckets have refilled (curl_easy_pause(3), which may run
    /// their write callbacks and pause them again at once). Does nothing while no transfer is limited.
    func resumeThrottledTransfers() {
        guard bandwidth.isActive else { return }
        let now = clock.now()
        bandwidth.rebalanceIfDue(now: now)
        let due = bandwidth.takeResumable(now: now)
        guard !due.isEmpty else { return }
        let running = meteredTransfers()
        for key in due {
            for connection in running[key]?.connections ?? [] { connection.easy.resume() }
        }
    }

    /// About once a second, before the state files are written: each running download's speed
    /// (`bytes_per_second`) and the limit it runs under (`rate_limit`), and the bytes per class
    /// for the metrics file.
    func meterTransfers(now: Int64) {
        transferMeter.sample(now: now)
        for (key, metered) in meteredTransfers() {
            metered.job?.apply(.rate(bytesPerSecond: transferMeter.bytesPerSecond(key), limit: bandwidth.rateLimit(of: key)),
                               to: metered.download)
        }
        context.metrics?.bytesByClass = transferMeter.bytesByClass
    }
}
