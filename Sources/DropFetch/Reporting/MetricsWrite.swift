/// The metrics file and the counters it continues from, written on a worker: replacing a file
/// frees the old one's blocks, which waits for the disk on a `discard` mount (ext4 without a
/// journal), and the held gauge reads hold/.
final class MetricsWrite: WorkerTask {
    /// One file's outcome, for the warnings on the loop.
    struct Outcome: Sendable {
        let path: String
        let what: String
        let error: SystemError?
    }

    let request: Request
    /// Kept on the loop once the batch is back.
    private(set) var outcomes: [Outcome] = []

    /// `text` is the file's text, given the number of held jobs; it runs on the worker.
    init(counters: [UInt8]?, countersPath: String, path: String, holdFolder: String,
         text: @escaping @Sendable (Int) -> String) {
        request = Request(counters: counters, countersPath: countersPath, path: path, holdFolder: holdFolder, text: text)
    }

    func received(_ answer: [Outcome]) -> SystemError? {
        outcomes = answer
        return answer.lazy.compactMap(\.error).first
    }

    struct Request: WorkerRequest {
        /// Nil leaves the counters file alone (a fenced agent's spool may not answer).
        let counters: [UInt8]?
        let countersPath: String
        let path: String
        let holdFolder: String
        let text: @Sendable (Int) -> String

        /// The counters first, so that the file never shows more than a restart would continue from.
        func perform() -> [Outcome] {
            guard let counters else {
                return [write(Array(text(0).utf8), to: path, what: "metrics_file")]
            }
            let first = write(counters, to: countersPath, what: "metrics counters")
            let bytes = Array(text(SpoolStatus.heldCount(in: holdFolder)).utf8)
            return [first, write(bytes, to: path, what: "metrics_file")]
        }

        private func write(_ bytes: [UInt8], to target: String, what: String) -> Outcome {
            do {
                try AtomicFile.write(bytes, to: target, durable: false)
                return Outcome(path: target, what: what, error: nil)
            } catch {
                return Outcome(path: target, what: what, error: error)
            }
        }
    }
}
