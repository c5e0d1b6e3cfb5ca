import Foundation

/// Evaluates `condition` every `interval` until it holds or `timeout` has passed, for tests that
/// wait on another thread or process without a fixed sleep.
///
/// Returns whether the condition held; it is evaluated once more at the deadline.
///
///     #expect(try waitUntil(timeout: .seconds(5)) { server.requests.count == 2 })
func waitUntil(
    timeout: Duration = .seconds(20), interval: Duration = .milliseconds(20), _ condition: () throws -> Bool
) throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try condition() { return true }
        let (seconds, attoseconds) = interval.components
        Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
    }
    return try condition()
}
