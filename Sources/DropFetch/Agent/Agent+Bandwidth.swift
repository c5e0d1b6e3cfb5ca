import CCurl

/// Bandwidth limits (DESIGN.md §4 "Bandwidth") on the event loop: `bandwidth` (a
/// `BandwidthBudget`) holds a token bucket per limited transfer, the write callback of a limited
/// transfer asks it before taking bytes and pauses the transfer when its bucket is empty, and the
/// loop resumes it when the bucket has refilled. An unlimited transfer has no callback hook and
/// adds no timer.
extension Agent {
    /// Brings the budget up to date with the running transfers and the config, and gives each
    /// transfer what its limit needs. Called whenever a transfer starts or ends and on a reload.
    func applyRateLimits() {
        let now = MonotonicClock.now()
        bandwidth.setLimits(BandwidthBudget.Limits(config))
        var started: [Int] = []
        for (key, running) in transfers where !transferMeter.isTracking(key, running.transfer) {
            transferMeter.forget(key)
            let download = jobs[running.entry.unit.job]?.downloads[running.entry.unit.download]
            bandwidth.add(key, className: running.entry.className, ownLimit: download?.spec.maxDownloadLimit, now: now)
            transferMeter.track(key, running.transfer, className: running.entry.className, now: now)
            started.append(key)
        }
        for key in bandwidth.ids where transfers[key] == nil { bandwidth.remove(key) }
        for key in transferMeter.keys where transfers[key] == nil { transferMeter.forget(key) }
        bandwidth.rebalance(now: now)
        for key in started {
            guard let running = transfers[key] else { continue }
            if let job = jobs[running.entry.unit.job] {
                job.downloads[running.entry.unit.download].status.rateLimit = bandwidth.rateLimit(of: key)
                job.downloads[running.entry.unit.download].status.bytesPerSecond = nil
            }
            if let share = bandwidth.evenShare(of: key) { prepareLimited(running.transfer.easy, share: share) }
        }
        for (key, running) in transfers { hookLimit(running.transfer, key: key) }
        metrics?.bytesByClass = transferMeter.bytesByClass
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
    private func hookLimit(_ transfer: Transfer, key: Int) {
        let configured = config.limits.lowSpeed.bytesPerSecond
        guard bandwidth.isLimited(key) else {
            guard transfer.admit != nil else { return }
            transfer.admit = nil
            if configured > 0 { try? transfer.easy.set(CURLOPT_LOW_SPEED_LIMIT, Int(configured)) }
            return
        }
        if transfer.admit == nil {
            transfer.admit = { [unowned self] bytes in
                self.bandwidth.admit(key, bytes: bytes, now: MonotonicClock.now())
            }
        }
        if configured > 0, let share = bandwidth.evenShare(of: key) {
            try? transfer.easy.set(CURLOPT_LOW_SPEED_LIMIT, Int(max(1, min(configured, share / 2))))
        }
    }

    /// After each wake: divides the limits again once a second, and resumes the paused transfers
    /// whose buckets have refilled (curl_easy_pause(3), which may run their write callbacks and
    /// pause them again at once). Does nothing while no transfer is limited.
    func resumeThrottledTransfers() {
        guard bandwidth.isActive else { return }
        let now = MonotonicClock.now()
        bandwidth.rebalanceIfDue(now: now)
        for key in bandwidth.takeResumable(now: now) {
            transfers[key]?.transfer.easy.resume()
        }
    }

    /// About once a second, before the state files are written: each running download's speed
    /// (`bytes_per_second`) and the limit it runs under (`rate_limit`), and the bytes per class
    /// for the metrics file.
    func meterTransfers(now: Int64) {
        transferMeter.sample(now: now)
        for (key, running) in transfers {
            guard let job = jobs[running.entry.unit.job] else { continue }
            let index = running.entry.unit.download
            job.downloads[index].status.bytesPerSecond = transferMeter.bytesPerSecond(key)
            job.downloads[index].status.rateLimit = bandwidth.rateLimit(of: key)
        }
        metrics?.bytesByClass = transferMeter.bytesByClass
    }
}
