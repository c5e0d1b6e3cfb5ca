/// What one loop turn may receive. curl_multi_perform(3) reads every socket for as long as data
/// keeps coming: 16 transfers of 256 MiB from a fast server kept one call at work for 1.4 s, and
/// the loop with it (no claim, no filing, no new transfer meanwhile). So each transfer takes a
/// share of `bytesPerTurn` in a turn (at least one write, so that all make progress), and none
/// takes more once `turnTime` has passed; a transfer over it is paused (CURL_WRITEFUNC_PAUSE:
/// libcurl keeps the bytes) and resumed at the start of the next turn, which does not wait.
final class ReceiveBudget {
    static let bytesPerTurn = 4 << 20
    /// The smallest share: a few of libcurl's 256 KiB writes.
    static let smallestShare = 1 << 20
    /// Nanoseconds of receiving in one turn.
    static let turnTime: Int64 = 3_000_000

    private var turn = 0
    private var turnStart: Int64 = 0
    private var share = bytesPerTurn
    /// Transfers paused until the next turn, by easy-handle key.
    private var paused: [Int: Transfer] = [:]

    /// Some transfers wait for the next turn: the loop should not sleep.
    var hasPaused: Bool { !paused.isEmpty }

    /// At the start of a turn, before curl_multi_perform(3): a fresh budget shared by `running`
    /// transfers, and the transfers paused in the last turn resumed (curl_easy_pause(3), which may
    /// hand them their held bytes at once) if `current` still finds them running.
    func beginTurn(running: Int, current: (Int) -> Transfer?) {
        turn &+= 1
        turnStart = MonotonicClock.nanoseconds()
        share = max(ReceiveBudget.smallestShare, ReceiveBudget.bytesPerTurn / max(1, running))
        guard !paused.isEmpty else { return }
        let resumed = paused
        paused.removeAll(keepingCapacity: true)
        for (key, transfer) in resumed where current(key) === transfer { transfer.easy.resume() }
    }

    /// Forgets the paused transfers without resuming them (a fenced agent drops its transfers): a
    /// paused transfer holds this budget, so one kept here would keep itself and its `.part` open.
    func forgetPaused() {
        paused.removeAll()
    }

    /// Asked by the write callback before it takes `bytes`: false pauses the transfer until the
    /// next turn (the bytes are delivered again then).
    func admit(_ transfer: Transfer, bytes: Int) -> Bool {
        if transfer.receivedTurn != turn {
            transfer.receivedTurn = turn
            transfer.receivedInTurn = 0
        }
        if transfer.receivedInTurn > 0,
           transfer.receivedInTurn + bytes > share || MonotonicClock.nanoseconds() - turnStart > ReceiveBudget.turnTime {
            paused[transfer.easy.key] = transfer
            return false
        }
        transfer.receivedInTurn += bytes
        return true
    }
}
