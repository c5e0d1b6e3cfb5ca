import Glibc

/// What a loop step hands to a worker thread (`SyncWorker`): a value done there whole, whose
/// answer comes back to the loop with its batch. Both are `Sendable`, checked by the compiler: a
/// request holds only values and immutable handles (descriptors as `FileDescriptor` and
/// `DirectoryHandle`), never an object the loop goes on changing, and its answer is a value too.
protocol WorkerRequest: Sendable {
    associatedtype Answer: Sendable
    /// Does the work on the calling thread: the worker's, or the loop's when there is no worker.
    func perform() -> Answer
}

/// File-system work that a loop step hands to a worker whole, because its renames and creations
/// can wait milliseconds for a folder's blocks under write I/O (a filing).
///
/// The task itself stays on the loop: it makes its `request` when it is made, and takes the
/// request's answer in `received`, on the loop, once the batch is back and before the step's
/// completion runs; it keeps what the completion reads (`ending`, `choice`, …). Only the request
/// and the answer cross threads.
protocol WorkerTask: AnyObject {
    associatedtype Request: WorkerRequest
    /// What the worker runs, made on the loop.
    var request: Request { get }
    /// Keeps `answer` for the step's completion (on the loop); returns the error the completion
    /// receives, nil when the task succeeded.
    func received(_ answer: Request.Answer) -> SystemError?
}

extension WorkerTask {
    /// Does the work on the calling thread and keeps its answer: without a worker (at the end of
    /// a run, in the tests).
    func perform() -> SystemError? {
        received(request.perform())
    }

    /// The request as work for a worker and the step that takes its answer back on the loop,
    /// typed end to end: the answer goes through a slot of the request's own `Answer` type, so
    /// no answer is ever cast back from `any Sendable`.
    func exchange() -> WorkerExchange {
        let slot = WorkerExchange.Slot<Request.Answer>()
        let request = self.request
        return WorkerExchange(work: { slot.fill(request.perform()) }, collect: { [self] in
            guard let answer = slot.take() else {
                return SystemError(code: ECANCELED, operation: "take the answer of a worker request")
            }
            return received(answer)
        })
    }
}

/// One request's trip to a worker and back (`WorkerTask.exchange()`): `work` runs on the worker,
/// `collect` on the loop once the batch is back.
struct WorkerExchange {
    /// Where the worker puts a request's answer for the loop: written once, then read once, with
    /// the batch queues' lock between the two.
    final class Slot<Answer: Sendable>: Sendable {
        private let value = Locked<Answer?>(nil)

        func fill(_ answer: Answer) {
            value.withLock { $0 = answer }
        }

        func take() -> Answer? {
            value.withLock { stored in
                defer { stored = nil }
                return stored
            }
        }
    }

    let work: @Sendable () -> Void
    let collect: () -> SystemError?
}
