/// A node of a parsed YAML document with the place it starts, so config errors can point at it.
struct YAMLNode: Sendable, Equatable {
    /// One `key: value` pair of a mapping; keys are always scalars.
    struct Entry: Sendable, Equatable {
        var key: String
        var keyMark: YAMLMark
        var value: YAMLNode
    }

    enum Content: Sendable, Equatable {
        /// Text of a scalar; `isPlain` is false for quoted and block (`|`, `>`) scalars.
        case scalar(String, isPlain: Bool)
        case sequence([YAMLNode])
        /// Entries in document order, duplicates included (the reader decides what a duplicate means).
        case mapping([Entry])
    }

    var content: Content
    var mark: YAMLMark

    /// Whether the node is a plain YAML null: empty, `~` or `null` (core schema).
    var isNull: Bool {
        guard case .scalar(let text, isPlain: true) = content else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(text)
    }

    /// The text of a scalar that is not null; nil for null, sequences and mappings.
    var text: String? {
        guard case .scalar(let text, _) = content, !isNull else { return nil }
        return text
    }

    /// How the node reads in an error message: `'abc'`, `"4" (quoted)`, `a list`, `a mapping`, `nothing`.
    var summary: String {
        switch content {
        case .scalar(let text, let isPlain):
            if isNull { return "nothing" }
            let escaped = text.unicodeScalars.map { $0.properties.generalCategory == .control
                ? $0.escaped(asASCII: true) : String($0) }.joined()
            let shown = escaped.count > 40 ? escaped.prefix(40) + "…" : Substring(escaped)
            return isPlain ? "'\(shown)'" : "\"\(shown)\" (quoted)"
        case .sequence:
            return "a list"
        case .mapping:
            return "a mapping"
        }
    }
}
