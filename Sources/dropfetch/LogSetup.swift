import DropFetch
import Glibc
import Logging

/// Log lines to stderr; under systemd (`$JOURNAL_STREAM` naming stderr's device and inode) each line
/// carries an sd-daemon(3) `<N>` priority prefix so the journal files it at the right level.
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
        line += StderrLogHandler.escaped("\(event.message)")
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for key in merged.keys.sorted() { line += " \(key)=" + StderrLogHandler.escaped("\(merged[key]!)") }
        FileHandleStream.write(line + "\n", to: 2)
    }

    /// `text` with C0 controls (LF and TAB included), DEL and C1 controls written as `\u{…}`, so a job
    /// file's name or a server's text can neither forge a log line nor drive the terminal (ANSI escapes).
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
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
    /// Whether stderr is the journal stream (`$JOURNAL_STREAM` names it), read once at start.
    static let journal = JournalStream.isStandardError()

    static func bootstrap(level: Config.LogLevel) {
        let journal = LogSetup.journal
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
