/// A small JSON writer (RFC 8259) for status and state files: fixed key order, two-space indent,
/// no Foundation round trip — the agent writes two of these per job.
struct JSONText {
    private(set) var bytes: [UInt8] = []
    private var depth = 0
    private var needsComma = [false]

    init() { bytes.reserveCapacity(1024) }

    mutating func beginObject(_ key: String? = nil) {
        prefix(key)
        bytes.append(UInt8(ascii: "{"))
        open()
    }

    mutating func endObject() {
        close()
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func beginArray(_ key: String) {
        prefix(key)
        bytes.append(UInt8(ascii: "["))
        open()
    }

    mutating func endArray() {
        close()
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func field(_ key: String, _ value: String?) {
        prefix(key)
        guard let value else { return null() }
        string(value)
    }

    /// A string member of the array begun last.
    mutating func element(_ value: String) {
        prefix(nil)
        string(value)
    }

    mutating func field(_ key: String, _ value: Int?) {
        prefix(key)
        guard let value else { return null() }
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func field(_ key: String, _ value: Int64?) {
        prefix(key)
        guard let value else { return null() }
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func field(_ key: String, _ value: Double) {
        prefix(key)
        let text = value.isFinite ? String(value) : "0"
        bytes.append(contentsOf: text.utf8)
    }

    mutating func field(_ key: String, failure: Failure?) {
        guard let failure else {
            prefix(key)
            return null()
        }
        beginObject(key)
        field("kind", failure.kind.rawValue)
        field("message", failure.message)
        endObject()
    }

    private mutating func null() { bytes.append(contentsOf: "null".utf8) }

    private mutating func open() {
        depth += 1
        needsComma.append(false)
    }

    private mutating func close() {
        let hadMembers = needsComma.removeLast()
        depth -= 1
        if hadMembers { newline() }
    }

    private mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
    }

    /// Comma, newline and indent before a member, then `"key": ` inside objects.
    private mutating func prefix(_ key: String?) {
        guard depth > 0 else { return }
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
        newline()
        if let key {
            // Keys are the writer's own literals: nothing in them needs escaping.
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: key.utf8)
            bytes.append(contentsOf: "\": ".utf8)
        }
    }

    /// A JSON string with `"`, `\` and control characters escaped.
    private mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most values need no escape: copied whole.
        if !value.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0x7F }) {
            bytes.append(contentsOf: value.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        func hex(_ digit: UInt8) -> UInt8 { digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10 }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: "\\\\".utf8)
            case 0x0A: bytes.append(contentsOf: "\\n".utf8)
            case 0x0D: bytes.append(contentsOf: "\\r".utf8)
            case 0x09: bytes.append(contentsOf: "\\t".utf8)
            case 0..<0x20, 0x7F:
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(hex(byte >> 4))
                bytes.append(hex(byte & 0x0F))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
