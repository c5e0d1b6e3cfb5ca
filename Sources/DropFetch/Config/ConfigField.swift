/// One value of the config file with its key path, read as a typed value or reported as a located error.
struct ConfigField {
    let file: String
    /// Dotted key path such as `limits.low_speed.for`; empty for the document root.
    let path: String
    let node: YAMLNode

    /// The child at `key` of a mapping field.
    func child(_ key: String, node: YAMLNode) -> ConfigField {
        ConfigField(file: file, path: path.isEmpty ? key : "\(path).\(key)", node: node)
    }

    /// An error about this field, at its node or at `mark`.
    func error(_ message: String, at mark: YAMLMark? = nil) -> ConfigError {
        let place = mark ?? node.mark
        return ConfigError(file: file, line: place.line, column: place.column, keyPath: path, message: message)
    }

    /// The entries of a mapping (nothing counts as empty), refusing duplicates and keys not in `known`.
    func entries(known: [String]) throws(ConfigError) -> [(key: String, field: ConfigField)] {
        var errors: [ConfigError] = []
        let fields = try entries(known: known, reporting: &errors)
        if let first = errors.first { throw first }
        return fields
    }

    /// As `entries(known:)`, but a bad key goes to `errors` and is skipped, so `check` reports every error.
    func entries(known: [String], reporting errors: inout [ConfigError]) throws(ConfigError)
        -> [(key: String, field: ConfigField)] {
        if node.isNull { return [] }
        guard case .mapping(let entries) = node.content else {
            throw error("expected a mapping of \(known.joined(separator: ", ")), got \(node.summary)")
        }
        var seen: [String: YAMLMark] = [:]
        var fields: [(key: String, field: ConfigField)] = []
        for entry in entries {
            let field = child(entry.key, node: entry.value)
            if let first = seen[entry.key] {
                errors.append(field.error(
                    "duplicate key '\(entry.key)' (first at line \(first.line), column \(first.column))",
                    at: entry.keyMark))
                continue
            }
            guard known.contains(entry.key) else {
                errors.append(field.error(
                    "unknown key '\(entry.key)'; expected one of \(known.joined(separator: ", "))",
                    at: entry.keyMark))
                continue
            }
            seen[entry.key] = entry.keyMark
            fields.append((entry.key, field))
        }
        return fields
    }

    /// The items of a list (nothing counts as empty), each with its `[index]` path.
    func items() throws(ConfigError) -> [ConfigField] {
        if node.isNull { return [] }
        guard case .sequence(let items) = node.content else {
            throw error("expected a list, got \(node.summary)")
        }
        return items.enumerated().map { ConfigField(file: file, path: "\(path)[\($0.offset)]", node: $0.element) }
    }

    /// A non-empty string; any scalar text counts, so `agent_id: 42` is the string "42".
    func string() throws(ConfigError) -> String {
        guard let text = node.text else { throw error("expected a string, got \(node.summary)") }
        guard !text.isEmpty else { throw error("must not be empty") }
        return text
    }

    /// A file or folder path: a non-empty string without NUL.
    func filePath() throws(ConfigError) -> String {
        guard let text = node.text else { throw error("expected a path, got \(node.summary)") }
        guard !text.isEmpty else { throw error("expected a path, got an empty string") }
        guard !text.utf8.contains(0) else { throw error("a path cannot contain a NUL character") }
        return text
    }

    /// A path, or nil when the value is null (the key then keeps its default).
    func optionalFilePath() throws(ConfigError) -> String? {
        node.isNull ? nil : try filePath()
    }

    /// An unquoted decimal integer no smaller than `minimum`; one beyond Int64 is out of range.
    func int(minimum: Int = .min) throws(ConfigError) -> Int {
        guard case .scalar(let text, isPlain: true) = node.content, !node.isNull else {
            throw error("expected an integer, got \(node.summary)")
        }
        guard let value = Int(text) else {
            let unsigned = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
            if !unsigned.isEmpty, unsigned.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw error("out of range: an integer must fit in 64 bits (\(Int.min)...\(Int.max)), got \(text)")
            }
            throw error("expected an integer, got \(node.summary)")
        }
        guard value >= minimum else { throw error("must be at least \(minimum), got \(value)") }
        return value
    }

    /// An unquoted `true` or `false` (YAML core schema; `yes`/`no` are refused as ambiguous).
    func bool() throws(ConfigError) -> Bool {
        if case .scalar(let text, isPlain: true) = node.content {
            if ["true", "True", "TRUE"].contains(text) { return true }
            if ["false", "False", "FALSE"].contains(text) { return false }
        }
        throw error("expected true or false, got \(node.summary)")
    }

    /// A duration in the notation of `Units.duration(_:)`, no shorter than `minimum`, at most 100 years.
    func duration(minimum: Duration = .zero) throws(ConfigError) -> Duration {
        guard let text = node.text else { throw error("expected a duration like 30s, got \(node.summary)") }
        let value: Duration
        do throws(Units.Problem) {
            value = try Units.checkedDuration(text)
        } catch .outOfRange {
            throw self.error("out of range: a duration must be at most \(Units.maxDurationText), got \(text)")
        } catch {
            throw self.error("expected a duration like 30s, got \(node.summary)")
        }
        guard value >= minimum else {
            let bound = minimum == .milliseconds(1) ? "longer than 0" : "at least \(Units.format(minimum))"
            throw error("must be \(bound), got \(text)")
        }
        return value
    }

    /// A byte count in the notation of `Units.size(_:)`, no smaller than `minimum`, at most 2^62.
    func size(minimum: Int64 = 0) throws(ConfigError) -> Int64 {
        guard let text = node.text else { throw error("expected a size like 10MB, got \(node.summary)") }
        let value: Int64
        do throws(Units.Problem) {
            value = try Units.checkedSize(text)
        } catch .outOfRange {
            throw self.error("out of range: a size must be at most \(Units.maxSizeText), got \(text)")
        } catch {
            throw self.error("expected a size like 10MB, got \(node.summary)")
        }
        guard value >= minimum else {
            let bound = minimum == 1 ? "greater than 0" : "at least \(minimum) bytes"
            throw error("must be \(bound), got \(text)")
        }
        return value
    }

    /// One of the raw values of `choices`, written as is.
    func choice<Choice: RawRepresentable>(_ choices: [Choice]) throws(ConfigError) -> Choice
    where Choice.RawValue == String {
        if let text = node.text, let value = choices.first(where: { $0.rawValue == text }) {
            return value
        }
        let names = choices.map(\.rawValue).joined(separator: ", ")
        throw error("expected one of \(names); got \(node.summary)")
    }
}
