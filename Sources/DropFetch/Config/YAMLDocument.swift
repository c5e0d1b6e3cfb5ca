/// Builds the node tree of a single-document YAML text from libyaml's event stream.
///
/// Refuses what a config never needs and an attacker could abuse: anchors and aliases (no
/// "billion laughs"), explicit tags, more than one document, and nesting deeper than `maxDepth`.
enum YAMLDocument {
    /// The deepest nesting of mappings and sequences accepted.
    static let maxDepth = 32

    /// An open mapping or sequence whose children are still arriving.
    private struct Frame {
        var isMapping: Bool
        var mark: YAMLMark
        var items: [YAMLNode] = []
        var entries: [YAMLNode.Entry] = []
        /// Set between a mapping key and its value.
        var pendingKey: (text: String, mark: YAMLMark)?

        var node: YAMLNode {
            YAMLNode(content: isMapping ? .mapping(entries) : .sequence(items), mark: mark)
        }
    }

    /// Parses `bytes` (UTF-8) and returns the root node, or nil when the text holds no document.
    static func parse(_ bytes: [UInt8]) throws(YAMLError) -> YAMLNode? {
        let parser = try YAMLParser(bytes: bytes)
        var stack: [Frame] = []
        var root: YAMLNode?
        var documents = 0
        while true {
            let event = try parser.nextEvent()
            switch event.kind {
            case .streamStart, .documentEnd:
                continue
            case .streamEnd:
                return root
            case .documentStart:
                documents += 1
                guard documents == 1 else {
                    throw YAMLError(mark: event.mark, keyPath: "", message: "only one YAML document is allowed")
                }
            case .alias:
                throw YAMLError(
                    mark: event.mark, keyPath: path(of: stack),
                    message: "aliases (*\(event.anchor ?? "")) are not allowed in the config")
            case .scalar:
                try checkProperties(of: event, stack: stack)
                try attach(YAMLNode(content: .scalar(event.value, isPlain: event.isPlain), mark: event.mark),
                           to: &stack, root: &root)
            case .sequenceStart, .mappingStart:
                try checkProperties(of: event, stack: stack)
                guard stack.count < maxDepth else {
                    throw YAMLError(
                        mark: event.mark, keyPath: path(of: stack),
                        message: "nesting is deeper than \(maxDepth) levels")
                }
                stack.append(Frame(isMapping: event.kind == .mappingStart, mark: event.mark))
            case .sequenceEnd, .mappingEnd:
                try attach(stack.removeLast().node, to: &stack, root: &root)
            }
        }
    }

    /// Refuses anchors (`&a`) and explicit tags (`!!str`) on a node.
    private static func checkProperties(of event: YAMLParser.Event, stack: [Frame]) throws(YAMLError) {
        if let anchor = event.anchor {
            throw YAMLError(
                mark: event.mark, keyPath: path(of: stack),
                message: "anchors (&\(anchor)) are not allowed in the config")
        }
        if let tag = event.tag {
            throw YAMLError(
                mark: event.mark, keyPath: path(of: stack),
                message: "tags (\(tag)) are not allowed in the config")
        }
    }

    /// Adds a finished node to the innermost open collection, as a key, a value or an item.
    private static func attach(_ node: YAMLNode, to stack: inout [Frame], root: inout YAMLNode?) throws(YAMLError) {
        let top = stack.count - 1
        guard top >= 0 else {
            root = node
            return
        }
        if !stack[top].isMapping {
            stack[top].items.append(node)
        } else if let key = stack[top].pendingKey {
            stack[top].entries.append(YAMLNode.Entry(key: key.text, keyMark: key.mark, value: node))
            stack[top].pendingKey = nil
        } else if let text = node.text {
            stack[top].pendingKey = (text, node.mark)
        } else {
            let what = node.isNull ? "an empty key" : "\(node.summary) as a key"
            throw YAMLError(mark: node.mark, keyPath: path(of: stack), message: "found \(what); keys must be names")
        }
    }

    /// The dotted key path (`limits.low_speed`, `classes[1].match`) of the node about to be attached.
    private static func path(of stack: [Frame]) -> String {
        var path = ""
        for frame in stack {
            if !frame.isMapping {
                path += "[\(frame.items.count)]"
            } else if let key = frame.pendingKey?.text {
                path += path.isEmpty ? key : ".\(key)"
            } else {
                return path
            }
        }
        return path
    }
}
