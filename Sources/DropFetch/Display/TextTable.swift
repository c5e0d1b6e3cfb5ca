/// Columns of text aligned for a fixed-width terminal: each column as wide as its widest cell,
/// two spaces between columns, numbers right-aligned, no trailing spaces.
public struct TextTable {
    public enum Alignment: Sendable { case left, right }

    private let header: [String]
    private let alignments: [Alignment]
    private var rows: [[String]] = []

    /// `columns`: each column's heading and alignment.
    public init(_ columns: [(String, Alignment)]) {
        header = columns.map(\.0)
        alignments = columns.map(\.1)
    }

    public var isEmpty: Bool { rows.isEmpty }

    /// Adds a row; missing cells are empty, control characters are shown as `?`.
    public mutating func add(_ cells: [String]) {
        var row = cells.prefix(header.count).map(HumanUnits.printable)
        while row.count < header.count { row.append("") }
        rows.append(row)
    }

    /// The heading line and the rows, aligned, each prefixed by `indent`.
    public func lines(indent: String = "") -> [String] {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                let isLast = column == row.count - 1
                if column > 0 { line += "  " }
                switch alignments[column] {
                case .left: line += cell + (isLast ? "" : padding)
                case .right: line += padding + cell
                }
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return indent + line
        }
    }
}
