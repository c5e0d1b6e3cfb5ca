/// The metrics file and the counters it continues from, written on a worker: replacing a file
/// frees the old one's blocks, which waits for the disk on a `discard` mount (ext4 without a
/// journal), and the held gauge reads hold/.
final class MetricsWrite: WorkerTask {
    /// One file's outcome, for the warnings on the loop.
    struct Outcome {
        let path: String
        let what: String
        let error: SystemError?
    }

    private let counters: [UInt8]
    private let countersPath: String
    private let path: String
    private let holdFolder: String
    /// The file's text, given the number of held jobs.
    private let text: (Int) -> String
    private(set) var outcomes: [Outcome] = []

    init(counters: [UInt8], countersPath: String, path: String, holdFolder: String, text: @escaping (Int) -> String) {
        self.counters = counters
        self.countersPath = countersPath
        self.path = path
        self.holdFolder = holdFolder
        self.text = text
    }

    /// The counters first, so that the file never shows more than a restart would continue from.
    func perform() -> SystemError? {
        outcomes = [write(counters, to: countersPath, what: "metrics counters")]
        let bytes = Array(text(SpoolStatus.heldCount(in: holdFolder)).utf8)
        outcomes.append(write(bytes, to: path, what: "metrics_file"))
        return outcomes.lazy.compactMap(\.error).first
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
