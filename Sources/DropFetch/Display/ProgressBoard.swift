/// The lines of the terminal progress of `dropfetch run`, as plain text: one per running
/// download (name, bar, percent, bytes, speed, ETA) and a total line. Drawing them (cursor moves,
/// colour) is the executable's business; this type only lays them out within a width.
public enum ProgressBoard {
    /// One line, no wider than asked, with where its bar's filled part is (for colour).
    public struct Line: Sendable, Equatable {
        public var text: String
        /// Character offsets of the bar's filled part, when the line has a bar.
        public var fill: Range<Int>?
    }

    /// The widest bar drawn, in characters.
    static let maxBar = 30
    /// The room kept right of the bar for percent, bytes, speed and ETA.
    static let nominalTail = 50

    /// The lines for `snapshot` in `width` columns (each at most `width - 1` characters, so a
    /// terminal never wraps one), at most `maxRows` of them; empty when nothing runs.
    public static func lines(_ snapshot: ProgressSnapshot, width: Int, maxRows: Int = 12) -> [Line] {
        guard !snapshot.isIdle else { return [] }
        let columns = max(20, width) - 1
        let rowsForDownloads = max(1, maxRows - 1)
        var shown = snapshot.downloads
        var hidden = 0
        if shown.count > rowsForDownloads {
            hidden = shown.count - (rowsForDownloads - 1)
            shown = Array(shown.prefix(rowsForDownloads - 1))
        }
        let rows = shown.map(Row.init)
        let pctWidth = rows.map(\.percent.count).max() ?? 0
        let amountWidth = rows.map(\.amount.count).max() ?? 0
        let speedWidth = rows.map(\.speed.count).max() ?? 0
        let longest = rows.map(\.label.count).max() ?? 0
        let labelWidth = min(longest, max(12, columns / 3))
        // The bar's width depends on the width alone, not on the numbers beside it, so that it
        // does not jump as they grow; what does not fit is cut at the end.
        var barWidth = min(maxBar, columns - labelWidth - 3 - nominalTail)
        // A narrow terminal drops the bar, then loses the line's end: the name comes first.
        if barWidth < 6 { barWidth = 0 }
        var result: [Line] = []
        for row in rows {
            var text = pad(truncate(row.label, to: labelWidth), labelWidth)
            var fill: Range<Int>?
            if barWidth > 0 {
                let filled = row.percentValue.map { barWidth * $0 / 100 } ?? 0
                let head = filled > 0 && filled < barWidth ? ">" : ""
                let body = String(repeating: "=", count: max(0, filled - head.count)) + head
                fill = (text.count + 2)..<(text.count + 2 + body.count)
                text += " [" + body + String(repeating: " ", count: barWidth - body.count) + "]"
            }
            text += "  " + padLeft(row.percent, pctWidth) + "  " + padLeft(row.amount, amountWidth)
                + "  " + padLeft(row.speed, speedWidth) + "  " + row.eta
            result.append(Line(text: truncate(text, to: columns), fill: fill))
        }
        if hidden > 0 { result.append(Line(text: truncate("  … and \(hidden) more running", to: columns), fill: nil)) }
        result.append(Line(text: truncate(totalLine(snapshot), to: columns), fill: nil))
        return result
    }

    /// `total: 2 running, 1 queued, 1 waiting  1.3 GiB / 2.7 GiB  48%  15.0 MiB/s  ETA 1m30s`.
    static func totalLine(_ snapshot: ProgressSnapshot) -> String {
        var counts = ["\(snapshot.downloads.count) running"]
        if snapshot.queued > 0 { counts.append("\(snapshot.queued) queued") }
        if snapshot.waiting > 0 { counts.append("\(snapshot.waiting) waiting") }
        let bytes = snapshot.downloads.reduce(Int64(0)) { $0 + $1.bytes }
        let sizes = snapshot.downloads.compactMap(\.size)
        let size: Int64? = sizes.count == snapshot.downloads.count ? sizes.reduce(0, +) : nil
        let speeds = snapshot.downloads.compactMap(\.bytesPerSecond)
        let speed: Int64? = speeds.isEmpty ? nil : speeds.reduce(0, +)
        var text = "total: " + counts.joined(separator: ", ") + "  " + HumanUnits.bytes(bytes)
        if let size {
            text += " / " + HumanUnits.bytes(size)
            if let percent = HumanUnits.percent(bytes: bytes, size: size) { text += "  \(percent)%" }
        }
        if let speed { text += "  " + HumanUnits.rate(speed) }
        if let eta = HumanUnits.eta(bytes: bytes, size: size, bytesPerSecond: speed) {
            text += "  ETA " + HumanUnits.duration(seconds: eta)
        }
        return text
    }

    /// One download's fields, formatted.
    private struct Row {
        let label: String
        let percentValue: Int?
        let percent: String
        let amount: String
        let speed: String
        let eta: String

        init(_ download: ProgressSnapshot.Download) {
            var label = HumanUnits.printable(download.job)
            if download.downloadsInJob > 1, let file = download.file { label += " " + HumanUnits.printable(file) }
            self.label = label
            percentValue = HumanUnits.percent(bytes: download.bytes, size: download.size)
            percent = percentValue.map { "\($0)%" } ?? "--%"
            amount = HumanUnits.bytes(download.bytes) + (download.size.map { " / " + HumanUnits.bytes($0) } ?? "")
            speed = download.bytesPerSecond.map(HumanUnits.rate) ?? "--"
            eta = "ETA " + (HumanUnits.eta(bytes: download.bytes, size: download.size, bytesPerSecond: download.bytesPerSecond)
                .map { HumanUnits.duration(seconds: $0) } ?? "--")
        }
    }

    /// At most `width` characters, the last one `…` when something was cut.
    static func truncate(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        guard width > 1 else { return String(text.prefix(max(0, width))) }
        return String(text.prefix(width - 1)) + "…"
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
