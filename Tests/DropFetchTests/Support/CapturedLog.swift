@testable import DropFetch
import Logging

/// The log of an agent run in the test process, kept in memory (message, then the metadata as
/// `key=value`), so that a test reads the lines a user reads without the process-wide LoggingSystem.
final class CapturedLog: Sendable {
    /// A pthread mutex (`Locked`), which ThreadSanitizer sees hand over, not `Mutex` (docs/architecture.md).
    private let lines = Locked<[String]>([])

    /// A logger at `info` whose every line lands in this log.
    func logger(label: String = "in-process") -> Logger {
        var logger = Logger(label: label) { _ in Handler(log: self) }
        logger.logLevel = .info
        return logger
    }

    /// Every line so far, one a line.
    var text: String { lines.withLock { $0.joined(separator: "\n") } }

    /// The lines that contain `part`.
    func lines(containing part: String) -> [String] {
        lines.withLock { $0.filter { $0.contains(part) } }
    }

    fileprivate func append(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    /// Writes each event as `message key=value …`, the metadata in key order.
    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
            let pairs = merged.keys.sorted().map { "\($0)=\(merged[$0]!)" }
            log.append((["\(event.message)"] + pairs).joined(separator: " "))
        }
    }
}
