import DropFetch
import Glibc
import Logging

/// Log lines to stderr; under systemd (`JOURNAL_STREAM` set) each line carries an sd-daemon(3)
/// `<N>` priority prefix so the journal files it at the right level.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let journal: Bool

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = journal ? "<\(StderrLogHandler.priority(event.level))>" : "\(Timestamp.now()) \(event.level) "
        line += "\(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for key in merged.keys.sorted() { line += " \(key)=\(merged[key]!)" }
        FileHandleStream.write(line + "\n", to: 2)
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

enum LogSetup {
    static func bootstrap(level: Config.LogLevel) {
        let journal = getenv("JOURNAL_STREAM") != nil
        let swiftLevel = Logger.Level(rawValue: level.rawValue) ?? .info
        LoggingSystem.bootstrap { _ in StderrLogHandler(logLevel: swiftLevel, journal: journal) }
    }
}

/// One write(2) per line, so concurrent writers do not interleave within a line.
enum FileHandleStream {
    static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 { if errno == EINTR { continue } else { return } }
            offset += written
        }
    }
}
