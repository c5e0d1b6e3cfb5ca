/// Max-min fair division of nested rate limits (docs/config.md "Bandwidth"): every claim is under
/// the optional total, under its group's optional limit and under its own cap; a claim that asks
/// for less than its share (its `demand`) keeps only that, and the rest goes to the others.
///
/// Progressive filling: all open claims grow at the same pace; when a limit is reached, the claims
/// under it stop growing. Each round closes at least one claim, so n claims take at most n rounds.
/// Pure arithmetic, in bytes per second.
///
///     FairShare.divide([.init(group: "a"), .init(group: "a"), .init(group: "b", demand: 50)],
///                      total: 300, groups: [:])          // [125, 125, 50]
enum FairShare {
    /// One transfer's part in the division.
    struct Claim: Sendable, Equatable {
        /// The class the transfer belongs to (key of `groups`).
        var group: String
        /// Its own limit (`max-download-limit`); nil when it has none.
        var cap: Double?
        /// What it can use now; infinity when it takes all it is given.
        var demand: Double

        init(group: String, cap: Double? = nil, demand: Double = .infinity) {
            self.group = group
            self.cap = cap
            self.demand = demand
        }
    }

    /// The rate of each claim, in the order of `claims`; nil for a claim under no limit at all
    /// (no total, no group limit, no cap): it is not throttled.
    static func divide(_ claims: [Claim], total: Double?, groups: [String: Double]) -> [Double?] {
        let limited = claims.indices.filter { index in
            total != nil || claims[index].cap != nil || groups[claims[index].group] != nil
        }
        var rates = [Double](repeating: 0, count: claims.count)
        var open = limited
        while !open.isEmpty {
            var used: [String: Double] = [:]
            var openIn: [String: Int] = [:]
            var sum = 0.0
            for index in limited {
                used[claims[index].group, default: 0] += rates[index]
                sum += rates[index]
            }
            for index in open { openIn[claims[index].group, default: 0] += 1 }

            var step = Double.infinity
            for index in open { step = min(step, ceiling(claims[index]) - rates[index]) }
            for (group, count) in openIn {
                if let limit = groups[group] { step = min(step, (limit - used[group, default: 0]) / Double(count)) }
            }
            if let total { step = min(step, (total - sum) / Double(open.count)) }
            guard step.isFinite else { break }
            step = max(0, step)
            for index in open {
                rates[index] += step
                used[claims[index].group, default: 0] += step
                sum += step
            }
            let totalFull = total.map { reached(sum, $0) } ?? false
            open.removeAll { index in
                let claim = claims[index]
                if totalFull || reached(rates[index], ceiling(claim)) { return true }
                if let limit = groups[claim.group], reached(used[claim.group, default: 0], limit) { return true }
                return false
            }
        }
        var result = [Double?](repeating: nil, count: claims.count)
        for index in limited { result[index] = rates[index] }
        return result
    }

    /// The lowest rate each claim gets when every claim wants all it can get: its cap, its group's
    /// limit split evenly among the group, the total split evenly among all, whichever is least.
    static func evenShares(_ claims: [Claim], total: Double?, groups: [String: Double]) -> [Double?] {
        var members: [String: Int] = [:]
        for claim in claims { members[claim.group, default: 0] += 1 }
        return claims.map { claim in
            var share = claim.cap
            if let limit = groups[claim.group] { share = min(share ?? .infinity, limit / Double(members[claim.group] ?? 1)) }
            if let total { share = min(share ?? .infinity, total / Double(claims.count)) }
            return share
        }
    }

    private static func ceiling(_ claim: Claim) -> Double {
        min(claim.cap ?? .infinity, claim.demand)
    }

    /// `value` has reached `limit`, allowing for rounding in the sums.
    private static func reached(_ value: Double, _ limit: Double) -> Bool {
        value >= limit - max(1e-6, abs(limit) * 1e-9)
    }
}
