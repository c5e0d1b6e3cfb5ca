import Glibc

/// The daemon's retention passes (HistoryRetention): at start-up, then hourly, each on a thread of
/// its own, so that reading a million status files never holds the event loop (the loop only
/// starts a pass and picks up its count, a mutex's worth of work). `run --once` calls `runNow`
/// after its loop instead.
final class HistoryPass {
    private enum State {
        case idle
        case running(pthread_t)
    }

    /// What the loop and the pass's thread share.
    private struct Shared {
        /// Set by the thread when its pass is over.
        var removal: HistoryRetention.Removal?
        /// Set by deinit: the pass stops between two removals.
        var stopping = false
    }

    /// The longest time between two passes, ms (DESIGN.md §10: at least hourly).
    static let interval: Int64 = 3_600_000
    /// How often the loop looks for a running pass's end, ms.
    static let collectInterval: Int64 = 1000

    private let retention: HistoryRetention
    private let shared = Locked(Shared())
    private var state = State.idle
    /// When the next pass is due (monotonic ms); the first at start-up.
    private var nextDue: Int64 = 0
    /// When the loop last looked for a running pass's end.
    private var lastLook: Int64 = 0

    init(spoolRoot: String) {
        retention = HistoryRetention(spoolRoot: spoolRoot)
    }

    deinit {
        if case .running(let thread) = state {
            shared.withLock { $0.stopping = true }
            pthread_join(thread, nil)
        }
    }

    /// When the loop should call `turn` again (monotonic ms); nil without a rule.
    func nextWake(rule: Config.History?) -> Int64? {
        if case .running = state { return lastLook + HistoryPass.collectInterval }
        guard let rule, rule.removesAnything else { return nil }
        return nextDue
    }

    /// Picks up the outcome of a pass that ended, else starts one when due, judging ages at
    /// `wallSeconds` (the agent clock's). Returns the outcome.
    func turn(now: Int64, wallSeconds: Int64, rule: Config.History?) -> HistoryRetention.Removal? {
        if case .running(let thread) = state {
            lastLook = now
            guard let removal = shared.withLock({ $0.removal }) else { return nil }
            pthread_join(thread, nil)
            shared.withLock { $0.removal = nil }
            state = .idle
            return removal
        }
        guard let rule, rule.removesAnything, now >= nextDue else { return nil }
        nextDue = now + HistoryPass.interval
        lastLook = now
        let retention = retention
        let shared = shared
        do {
            let thread = try WorkerThread.start("start the history pass") {
                let removal = HistoryPass.pass(retention, rule: rule, now: wallSeconds) { shared.withLock { $0.stopping } }
                shared.withLock { $0.removal = removal }
            }
            state = .running(thread)
            return nil
        } catch {
            return HistoryRetention.Removal(removed: 0, error: error)
        }
    }

    /// One pass now, on the caller's thread (`run --once`, after its loop).
    func runNow(rule: Config.History?, wallSeconds: Int64) -> HistoryRetention.Removal? {
        guard let rule, rule.removesAnything else { return nil }
        return HistoryPass.pass(retention, rule: rule, now: wallSeconds) { false }
    }

    /// Selects and removes under `rule` at `now` (wall seconds).
    static func pass(_ retention: HistoryRetention, rule: Config.History, now: Int64, stop: () -> Bool) -> HistoryRetention.Removal {
        do {
            let selection = try retention.select(rule, now: now, stop: stop)
            return retention.remove(selection, stop: stop)
        } catch {
            return HistoryRetention.Removal(removed: 0, error: error)
        }
    }
}
