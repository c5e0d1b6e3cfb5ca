import Foundation

/// The third mount of the Distributed suites and the command that cuts it off from the volume's
/// brick, from the environment: `DROPFETCH_TEST_SPOOL_C` (a mount of the volume whose FUSE client
/// lives in a network namespace of its own) and `DROPFETCH_TEST_SPLIT_CMD` (Tests/Distributed/
/// gluster.sh: `cut` takes the namespace's link down, `heal` brings it up). `make test-distributed`
/// sets both where a network namespace can be made; the brick drops a cut-off client, and its
/// locks, about 5 s after a cut (`network.ping-timeout 5` and the brick's TCP user timeout).
enum NetworkSplit {
    private static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// Mounts a, b and c: a for the tests' own reads, b for the agent that stays connected, c for
    /// the one that is cut off. Nil unless all three and the command are set.
    static var mounts: [String]? {
        guard let two = DistributedVolume.mounts, let c = environment["DROPFETCH_TEST_SPOOL_C"], !c.isEmpty,
              command != nil else { return nil }
        return two + [c]
    }

    private static var command: String? {
        guard let path = environment["DROPFETCH_TEST_SPLIT_CMD"], !path.isEmpty else { return nil }
        return path
    }

    /// Cuts mount c's client off from the brick; what it has in flight waits, and once the client
    /// gives up (ping timeout) its calls fail with ENOTCONN.
    static func cut() throws { try run("cut") }

    /// Joins mount c's client to the brick again; it reconnects within a few seconds.
    static func heal() throws { try run("heal") }

    private static func run(_ verb: String) throws {
        guard let command else { throw NetworkSplitError.notConfigured }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command)
        process.arguments = [verb]
        try process.runSerially()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw NetworkSplitError.failed(verb, process.terminationStatus)
        }
    }

    /// Waits until `instant` on the continuous clock: the length of a cut is part of a scenario,
    /// not a wait for something to happen.
    static func hold(until instant: ContinuousClock.Instant) {
        let left = instant - ContinuousClock.now
        guard left > .zero else { return }
        Thread.sleep(forTimeInterval: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
    }
}

enum NetworkSplitError: Error {
    case notConfigured
    case failed(String, Int32)
}
