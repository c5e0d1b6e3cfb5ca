import DropFetch
import Glibc
import Logging

/// Log lines to stderr in logfmt (`ts=… level=info msg="job done" job=a.url url=… bytes=…`), each
/// value quoted and escaped where it must be (Logfmt), through `TerminalOutput` so that they
/// appear above the live progress. Under systemd (`$JOURNAL_STREAM` naming stderr's device and
/// inode) a line is the sd-daemon(3) `<N>` priority prefix, the message, then the fields: the
/// journal keeps the time and the level itself.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    let journal: Bool
    let output: TerminalOutput

    /// Fields written first, in this order; the rest follow sorted by name.
    static let leadingKeys = ["job", "state", "url", "file", "bytes", "duration", "speed", "attempt", "attempts",
                              "error", "message", "hook", "program"]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line: String
        if journal {
            line = "<\(StderrLogHandler.priority(event.level))>" + Logfmt.escapedControls("\(event.message)")
        } else {
            line = "ts=" + StderrLogHandler.timestamp() + " level=\(event.level) msg=" + Logfmt.value("\(event.message)")
        }
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for key in StderrLogHandler.ordered(merged.keys) { line += " " + Logfmt.pair(key, "\(merged[key]!)") }
        output.log(line)
    }

    /// The keys of a line: the leading ones first, the rest by name.
    static func ordered(_ keys: Dictionary<String, Logger.Metadata.Value>.Keys) -> [String] {
        let present = Set(keys)
        return leadingKeys.filter(present.contains) + keys.filter { !leadingKeys.contains($0) }.sorted()
    }

    /// UTC RFC 3339 with milliseconds: `2026-11-21T22:00:00.123Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let millis = Int(now.tv_nsec) / 1_000_000
        let seconds = Timestamp.format(seconds: Int64(now.tv_sec))
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return String(seconds.dropLast()) + "." + fraction + "Z"
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

    /// Installs the stderr handler at `level` (at least `warning` when `quiet`) and returns the
    /// output it writes through, which also draws the progress of `run`.
    @discardableResult
    static func bootstrap(level: Config.LogLevel, quiet: Bool = false) -> TerminalOutput {
        let journal = LogSetup.journal
        var swiftLevel = Logger.Level(rawValue: level.rawValue) ?? .info
        if quiet, swiftLevel < .warning { swiftLevel = .warning }
        let output = TerminalOutput.forStandardError(journal: journal, quiet: quiet)
        let chosen = swiftLevel
        LoggingSystem.bootstrap { _ in StderrLogHandler(logLevel: chosen, journal: journal, output: output) }
        return output
    }
}

/// One write(2) per line, so concurrent writers do not interleave within a line.
enum FileHandleStream {
    /// Writes all of `text`; false when the descriptor refuses (a closed pipe).
    @discardableResult
    static func write(_ text: String, to descriptor: Int32) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 { if errno == EINTR { continue } else { return false } }
            offset += written
        }
        return true
    }
}
