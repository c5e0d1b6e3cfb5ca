/// The speed of each running transfer (`bytes_per_second` in its state file) and the bytes
/// received per class (the metrics file), from the transfers' byte counts sampled about once a
/// second by the event loop; the write callback of an unlimited transfer counts nothing.
///
/// A transfer that ended is counted a last time and let go by `forget`, which the agent calls
/// as the transfer leaves its table (`BandwidthControl.transferEnded`, or the next
/// `applyRateLimits` while limits are in force). Held strongly: a weak reference gives every
/// transfer a side table and makes each of its retains and releases take the slow path.
struct TransferMeter {
    private struct Track {
        let transfer: Transfer
        let className: String
        /// Bytes of the transfer already added to its class.
        var counted: Int64
        /// (monotonic ms, bytes) of the last few seconds, oldest first.
        var samples: [(at: Int64, bytes: Int64)]
    }

    /// The speed is averaged over this span, so that a limited transfer's steps smooth out.
    static let span: Int64 = 3000

    /// Bytes received by transfers of each class since the agent started (resumed prefixes not
    /// included; a restarted download's bytes count again, since they were received again).
    private(set) var bytesByClass: [String: Int64] = [:]
    private var tracks: [Int: Track] = [:]

    /// Starts metering a transfer; what its `.part` already held is not counted.
    mutating func track(_ key: Int, _ transfer: Transfer, className: String, now: Int64) {
        let written = transfer.downloadedBytes
        tracks[key] = Track(transfer: transfer, className: className, counted: written, samples: [(now, written)])
    }

    /// Whether this very transfer is metered under `key` (a new easy handle may reuse an old address).
    func isTracking(_ key: Int, _ transfer: Transfer) -> Bool { tracks[key]?.transfer === transfer }

    var keys: [Int] { Array(tracks.keys) }
    var count: Int { tracks.count }

    /// Counts a transfer's last bytes (if it still exists) and stops metering it.
    mutating func forget(_ key: Int) {
        guard let track = tracks.removeValue(forKey: key) else { return }
        bytesByClass[track.className, default: 0] += max(0, track.transfer.downloadedBytes - track.counted)
    }

    /// Reads every transfer's byte count: adds the new bytes to its class and keeps a sample for
    /// its speed.
    mutating func sample(now: Int64) {
        for key in tracks.keys {
            guard var track = tracks[key] else { continue }
            let transfer = track.transfer
            let written = transfer.downloadedBytes
            if written >= track.counted {
                bytesByClass[track.className, default: 0] += written - track.counted
            } else {
                // Started over from zero (the server ignored the range): the speed starts over too.
                track.samples.removeAll()
            }
            track.counted = written
            track.samples.append((now, written))
            while track.samples.count > 2, now - track.samples[1].at >= TransferMeter.span {
                track.samples.removeFirst()
            }
            tracks[key] = track
        }
    }

    /// Bytes per second over the last few seconds; nil before two samples a moment apart.
    func bytesPerSecond(_ key: Int) -> Int64? {
        guard let samples = tracks[key]?.samples, let first = samples.first, let last = samples.last,
              last.at - first.at >= 200 else { return nil }
        return max(0, (last.bytes - first.bytes) * 1000 / (last.at - first.at))
    }
}
