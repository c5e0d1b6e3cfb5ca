/// File-system work that a loop step hands to the `SyncWorker` whole, because its renames and
/// creations can wait milliseconds for a folder's blocks under write I/O (a filing). `perform`
/// runs on the worker thread: it touches only what the task holds, and keeps its result for the
/// step's completion, which reads it on the loop once the batch is back.
protocol WorkerTask: AnyObject {
    /// Does the work; nil when it succeeded.
    func perform() -> SystemError?
}
