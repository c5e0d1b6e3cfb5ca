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

    /// `received` for an answer that came back in a batch, where answers of every kind travel
    /// as `any Sendable`: it is this task's own request's answer.
    func receive(erased answer: any Sendable) -> SystemError? {
        guard let answer = answer as? Request.Answer else {
            preconditionFailure("\(Self.self) got an answer of another request: \(type(of: answer))")
        }
        return received(answer)
    }
}
