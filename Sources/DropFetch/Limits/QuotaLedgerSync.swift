import Glibc

/// The quota ledger's once-a-second exchange as a worker request (issue 23: nothing slow on the
/// loop): this agent's counts written to its file (temp, rename) and every other agent's file
/// read and summed. The loop adds its own counts, which it keeps in memory, to what comes back.
final class QuotaLedgerSync: WorkerTask {
    let request: Request
    /// The other agents' counts, read on the loop once the batch is back.
    private(set) var others: [QuotaUsage.Key: Int64] = [:]
    /// Why this agent's file could not be written, if it was not.
    private(set) var writeError: SystemError?

    init(folder: String, agent: String, text: String?, bound: QuotaBound, wall: Int64) {
        request = Request(folder: folder, agent: agent, text: text, bound: bound, wall: wall)
    }

    func received(_ answer: Answer) -> SystemError? {
        others = answer.others
        writeError = answer.writeError
        return nil
    }

    struct Answer: Sendable {
        let others: [QuotaUsage.Key: Int64]
        let writeError: SystemError?
    }

    struct Request: WorkerRequest {
        let folder: String
        let agent: String
        /// This agent's file as it must read now; nil when it has not changed.
        let text: String?
        /// What another agent's count can be at most (`QuotaBound`).
        let bound: QuotaBound
        /// The agent's wall time in seconds when the exchange was asked for (its `AgentClock`).
        let wall: Int64

        func perform() -> Answer {
            var failure: SystemError?
            if let text {
                do {
                    try QuotaLedger.write(text, folder: folder, agent: agent)
                } catch {
                    failure = error
                }
            }
            let others = QuotaLedger.others(in: folder, except: agent, bound: bound, now: wall)
            return Answer(others: others, writeError: failure)
        }
    }
}
