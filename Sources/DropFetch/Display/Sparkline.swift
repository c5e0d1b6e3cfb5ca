/// A bar sparkline as inline SVG (SVG 1.1, no script, no external reference): one bar per value,
/// scaled to the largest, drawn in the text color so it follows the light or dark scheme.
enum Sparkline {
    static let barWidth = 8
    static let gap = 2
    static let height = 48

    /// `values` oldest first; `label` is what a screen reader says instead of the picture.
    static func svg(_ values: [Int64], label: String) -> String {
        let step = barWidth + gap
        let width = max(1, values.count * step)
        let peak = values.max() ?? 0
        var bars: [String] = []
        for (index, value) in values.enumerated() where value > 0 && peak > 0 {
            // At least one unit high, so that a quiet minute still shows.
            let scaled = max(1, Int((Double(value) / Double(peak) * Double(height - 2)).rounded()))
            bars.append("<rect x=\"\(index * step)\" y=\"\(height - scaled)\" width=\"\(barWidth)\" height=\"\(scaled)\"/>")
        }
        let escaped = HTMLText.escape(label)
        var svg = "<svg class=\"spark\" role=\"img\" aria-label=\"\(escaped)\" viewBox=\"0 0 \(width) \(height)\" "
        svg += "width=\"\(width)\" height=\"\(height)\" preserveAspectRatio=\"none\" xmlns=\"http://www.w3.org/2000/svg\">"
        svg += "<title>\(escaped)</title>"
        let axis = String(height - 1) + ".5"
        svg += "<line x1=\"0\" y1=\"\(axis)\" x2=\"\(width)\" y2=\"\(axis)\" class=\"axis\"/>"
        return svg + bars.joined() + "</svg>"
    }
}
