import CYaml

/// A 1-based line and column in YAML text (libyaml's `yaml_mark_t` counts from 0).
struct YAMLMark: Sendable, Equatable {
    var line: Int
    var column: Int

    init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    init(_ mark: yaml_mark_t) {
        self.init(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }
}

/// A problem found while reading YAML: a libyaml syntax error or a construct the config refuses.
struct YAMLError: Error, Sendable, Equatable {
    var mark: YAMLMark?
    /// Dotted key path of the node being read, when known.
    var keyPath: String
    var message: String
}

/// Streams the events of libyaml's parser (`yaml_parser_parse`) over a private copy of the text.
///
/// Owns the `yaml_parser_t` and the input buffer it points into; both are freed in `deinit`.
final class YAMLParser {
    /// One parser event, copied out of libyaml's `yaml_event_t`.
    struct Event {
        enum Kind {
            case streamStart, streamEnd, documentStart, documentEnd
            case alias, scalar, sequenceStart, sequenceEnd, mappingStart, mappingEnd
        }

        var kind: Kind
        var mark: YAMLMark
        /// The anchor (`&a`) on a node, or the name an alias (`*a`) refers to.
        var anchor: String?
        /// An explicit tag such as `tag:yaml.org,2002:str`.
        var tag: String?
        /// Scalar text; empty for other events.
        var value = ""
        /// Whether a scalar was written unquoted (plain style), so it may be a number, bool or null.
        var isPlain = false
    }

    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let input: UnsafeMutableBufferPointer<UInt8>
    private let inputCount: Int

    /// Prepares a parser over `bytes` with `yaml_parser_initialize` and `yaml_parser_set_input_string`.
    init(bytes: [UInt8]) throws(YAMLError) {
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        guard yaml_parser_initialize(parser) != 0 else {
            parser.deallocate()
            throw YAMLError(mark: nil, keyPath: "", message: "libyaml could not allocate a parser")
        }
        let input = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        _ = input.initialize(from: bytes)
        yaml_parser_set_input_string(parser, input.baseAddress, bytes.count)
        self.parser = parser
        self.input = input
        self.inputCount = bytes.count
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
        input.deallocate()
    }

    /// Returns the next event (`yaml_parser_parse`), or the syntax error libyaml found.
    func nextEvent() throws(YAMLError) -> Event {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) != 0 else { throw lastError() }
        defer { yaml_event_delete(&event) }
        let mark = YAMLMark(event.start_mark)
        switch event.type {
        case YAML_STREAM_START_EVENT:
            return Event(kind: .streamStart, mark: mark)
        case YAML_STREAM_END_EVENT:
            return Event(kind: .streamEnd, mark: mark)
        case YAML_DOCUMENT_START_EVENT:
            return Event(kind: .documentStart, mark: mark)
        case YAML_DOCUMENT_END_EVENT:
            return Event(kind: .documentEnd, mark: mark)
        case YAML_ALIAS_EVENT:
            return Event(kind: .alias, mark: mark, anchor: Self.string(event.data.alias.anchor))
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let value = scalar.value.map {
                String(decoding: UnsafeBufferPointer(start: $0, count: scalar.length), as: UTF8.self)
            }
            return Event(
                kind: .scalar, mark: mark, anchor: Self.string(scalar.anchor), tag: Self.string(scalar.tag),
                value: value ?? "", isPlain: scalar.style == YAML_PLAIN_SCALAR_STYLE)
        case YAML_SEQUENCE_START_EVENT:
            let start = event.data.sequence_start
            return Event(
                kind: .sequenceStart, mark: mark, anchor: Self.string(start.anchor), tag: Self.string(start.tag))
        case YAML_SEQUENCE_END_EVENT:
            return Event(kind: .sequenceEnd, mark: mark)
        case YAML_MAPPING_START_EVENT:
            let start = event.data.mapping_start
            return Event(
                kind: .mappingStart, mark: mark, anchor: Self.string(start.anchor), tag: Self.string(start.tag))
        case YAML_MAPPING_END_EVENT:
            return Event(kind: .mappingEnd, mark: mark)
        default:
            throw YAMLError(mark: mark, keyPath: "", message: "libyaml returned an unexpected event")
        }
    }

    /// Describes the parser's error fields (`problem`, `context` and their marks) after a failed parse.
    private func lastError() -> YAMLError {
        let state = parser.pointee
        if state.error == YAML_MEMORY_ERROR {
            return YAMLError(mark: nil, keyPath: "", message: "libyaml ran out of memory")
        }
        var message = state.problem.map { String(cString: $0) } ?? "syntax error"
        if let context = state.context {
            let start = YAMLMark(state.context_mark)
            message = "\(String(cString: context)) started at line \(start.line), column \(start.column): \(message)"
        }
        // Reader errors (bad encoding, control characters) carry only a byte offset, not a mark.
        let mark = state.error == YAML_READER_ERROR
            ? markOfByte(at: state.problem_offset) : YAMLMark(state.problem_mark)
        return YAMLError(mark: mark, keyPath: "", message: message)
    }

    /// Line and column (in characters, as libyaml counts them) of a byte offset in the input.
    private func markOfByte(at offset: Int) -> YAMLMark {
        var mark = YAMLMark(line: 1, column: 1)
        for byte in input.prefix(min(offset, inputCount)) {
            if byte == UInt8(ascii: "\n") {
                mark.line += 1
                mark.column = 1
            } else if byte & 0xC0 != 0x80 {
                mark.column += 1
            }
        }
        return mark
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
