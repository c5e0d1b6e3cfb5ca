import DropFetch
import Glibc
import Synchronization

/// stderr, shared by the log handler and the live progress of `dropfetch run`: when stderr is a
/// terminal the progress block (ProgressBoard's lines) is redrawn in place below the log, and a
/// log line is written above it (erase the block, the line, the block again, in one write(2)).
/// Otherwise log lines go out as they are: no carriage returns, no escape codes.
final class TerminalOutput: Sendable {
    /// Whether the progress block is drawn (stderr a terminal, not the journal, not `TERM=dumb`,
    /// not `--quiet`).
    let drawsProgress: Bool
    /// Whether the bar is coloured (`NO_COLOR` unset or empty).
    let color: Bool

    /// The block on screen: its lines as written (colour included) and its row count.
    private struct Block {
        var lines: [String] = []
    }

    private let block = Mutex(Block())

    init(drawsProgress: Bool, color: Bool) {
        self.drawsProgress = drawsProgress
        self.color = color
    }

    /// The settings of this process: progress when stderr is a terminal other than the journal's,
    /// `TERM` is not `dumb` and `quiet` is off; colour unless `NO_COLOR` is set to something.
    static func forStandardError(journal: Bool, quiet: Bool) -> TerminalOutput {
        let term = getenv("TERM").map { String(cString: $0) }
        let noColor = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
        return TerminalOutput(drawsProgress: isatty(2) == 1 && !journal && !quiet && term != "dumb",
                              color: !noColor && term != "dumb")
    }

    /// Writes one log line (without its newline), above the progress block if one is shown.
    func log(_ line: String) {
        guard drawsProgress else {
            FileHandleStream.write(line + "\n", to: 2)
            return
        }
        block.withLock { block in
            var text = TerminalOutput.erase(block.lines.count) + line + "\n"
            text += block.lines.joined(separator: "\n")
            FileHandleStream.write(text, to: 2)
        }
    }

    /// Redraws the block for `snapshot` (nothing when it would not change); an idle snapshot
    /// clears it.
    func show(_ snapshot: ProgressSnapshot) {
        guard drawsProgress else { return }
        let size = TerminalOutput.size()
        let lines = ProgressBoard.lines(snapshot, width: size.columns, maxRows: max(2, min(12, size.rows - 2)))
        let drawn = lines.enumerated().map { index, line in
            styled(line, isTotal: index == lines.count - 1)
        }
        block.withLock { block in
            guard drawn != block.lines else { return }
            FileHandleStream.write(TerminalOutput.erase(block.lines.count) + drawn.joined(separator: "\n"), to: 2)
            block.lines = drawn
        }
    }

    /// Removes the block, leaving the cursor where the next line of output belongs.
    func clear() {
        guard drawsProgress else { return }
        block.withLock { block in
            guard !block.lines.isEmpty else { return }
            FileHandleStream.write(TerminalOutput.erase(block.lines.count), to: 2)
            block.lines = []
        }
    }

    /// Back to the start of a block of `rows` lines (the cursor sits at the end of its last
    /// line) and erase to the end of the screen.
    private static func erase(_ rows: Int) -> String {
        guard rows > 0 else { return "" }
        return "\r" + (rows > 1 ? "\u{1B}[\(rows - 1)A" : "") + "\u{1B}[J"
    }

    /// The line with its bar's filled part green and the total line bold, unless colour is off.
    private func styled(_ line: ProgressBoard.Line, isTotal: Bool) -> String {
        guard color else { return line.text }
        if isTotal { return "\u{1B}[1m" + line.text + "\u{1B}[0m" }
        guard let fill = line.fill, !fill.isEmpty else { return line.text }
        let characters = Array(line.text)
        guard fill.upperBound <= characters.count else { return line.text }
        return String(characters[..<fill.lowerBound]) + "\u{1B}[32m" + String(characters[fill])
            + "\u{1B}[0m" + String(characters[fill.upperBound...])
    }

    /// The terminal's columns and rows (TIOCGWINSZ on stderr), else `$COLUMNS` and 80 by 24.
    static func size() -> (columns: Int, rows: Int) {
        var window = winsize()
        if ioctl(2, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0 {
            return (Int(window.ws_col), window.ws_row > 0 ? Int(window.ws_row) : 24)
        }
        let columns = getenv("COLUMNS").flatMap { Int(String(cString: $0)) } ?? 80
        return (columns > 0 ? columns : 80, 24)
    }
}
