/// A small JSON writer (RFC 8259) for status and state files: fixed key order, two-space indent,
/// no Foundation round trip — the agent writes two of these per job. Keys are the caller's
/// literals (`StaticString`), copied without a retain; a key made at run time is escaped.
///
/// The text grows in memory of its own, written through a pointer: an `Array` checks its
/// uniqueness and capacity at each append, and its `append(contentsOf:)` costs more than a
/// status file's short pieces.
struct JSONText: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity = 1024
    private var depth = 0
    /// Bit `d`: the container open at depth `d` has a member (a comma goes before the next).
    private var hasMembers: UInt64 = 0

    init() { start = .allocate(capacity: capacity) }

    deinit { start.deallocate() }

    /// The text written so far.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: start, count: count)) }

    mutating func beginObject(_ key: StaticString? = nil) {
        prefix(key)
        put(UInt8(ascii: "{"))
        open()
    }

    /// An object under a key made at run time (a class name), escaped as any string value is.
    mutating func beginObject(named key: String) {
        member()
        string(key)
        literal(": {")
        open()
    }

    mutating func endObject() {
        close()
        put(UInt8(ascii: "}"))
    }

    mutating func beginArray(_ key: StaticString) {
        prefix(key)
        put(UInt8(ascii: "["))
        open()
    }

    mutating func endArray() {
        close()
        put(UInt8(ascii: "]"))
    }

    mutating func field(_ key: StaticString, _ value: String?) {
        prefix(key)
        guard let value else { return null() }
        string(value)
    }

    /// A string member of the array begun last.
    mutating func element(_ value: String) {
        prefix(nil)
        string(value)
    }

    mutating func field(_ key: StaticString, _ value: Int?) {
        prefix(key)
        guard let value else { return null() }
        integer(Int64(value))
    }

    mutating func field(_ key: StaticString, _ value: Int64?) {
        prefix(key)
        guard let value else { return null() }
        integer(value)
    }

    mutating func field(_ key: StaticString, _ value: Double) {
        prefix(key)
        append(value.isFinite ? String(value) : "0")
    }

    /// Seconds to the millisecond, as `String(Double)` writes such a value (`0.0`, `1.5`,
    /// `12.345`) without its conversion.
    mutating func field(_ key: StaticString, milliseconds value: Double) {
        let scaled = (value * 1000).rounded()
        guard value.isFinite, abs(scaled) < 1e15 else { return field(key, value) }
        prefix(key)
        var count = Int64(scaled)
        if count < 0 {
            put(UInt8(ascii: "-"))
            count = -count
        }
        integer(count / 1000)
        put(UInt8(ascii: "."))
        let fraction = count % 1000
        if fraction == 0 { return put(UInt8(ascii: "0")) }
        put(UInt8(ascii: "0") + UInt8(fraction / 100))
        if fraction % 100 == 0 { return }
        put(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        if fraction % 10 == 0 { return }
        put(UInt8(ascii: "0") + UInt8(fraction % 10))
    }

    /// The document ended by a newline, as files are.
    mutating func endLine() -> [UInt8] {
        put(0x0A)
        return bytes
    }

    /// Room for `more` bytes, the buffer doubled when it is short.
    private mutating func reserve(_ more: Int) {
        guard count + more > capacity else { return }
        let grown = max(capacity * 2, count + more)
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        larger.initialize(from: start, count: count)
        start.deallocate()
        start = larger
        capacity = grown
    }

    private mutating func put(_ byte: UInt8) {
        reserve(1)
        start[count] = byte
        count += 1
    }

    private mutating func put(_ run: UnsafeBufferPointer<UInt8>) {
        guard let base = run.baseAddress else { return }
        reserve(run.count)
        (start + count).initialize(from: base, count: run.count)
        count += run.count
    }

    /// Escapes and other short literals of the slow path.
    private mutating func put(_ text: String.UTF8View) {
        for byte in text { put(byte) }
    }

    /// A decimal integer, written digit by digit (no `String` made for it).
    private mutating func integer(_ value: Int64) {
        if value < 0 {
            guard value != .min else { return append(String(value)) }
            put(UInt8(ascii: "-"))
            return integer(-value)
        }
        if value < 10 { return put(UInt8(ascii: "0") + UInt8(value)) }
        var rest = value
        var reversed: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                       UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &reversed) { digits in
            while rest > 0 {
                digits[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { put(digits[index]) }
        }
    }

    /// A literal's bytes, copied without a retain.
    private mutating func literal(_ text: StaticString) {
        put(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// A string's UTF-8 bytes, copied from its storage at once.
    private mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { put($0) }
    }

    mutating func field(_ key: StaticString, failure: Failure?) {
        guard let failure else {
            prefix(key)
            return null()
        }
        beginObject(key)
        field("kind", failure.kind.rawValue)
        field("message", failure.message)
        endObject()
    }

    private mutating func null() { literal("null") }

    private mutating func open() {
        depth += 1
        precondition(depth < 64, "JSONText nests at most 63 containers")
        hasMembers &= ~(1 << UInt64(depth))
    }

    private mutating func close() {
        let hadMembers = hasMembers & (1 << UInt64(depth)) != 0
        depth -= 1
        if hadMembers { newline() }
    }

    private mutating func newline() {
        // A line feed and two spaces a level, copied at once for the depths status files reach.
        let lines: StaticString = "\n                              "
        let count = 1 + depth * 2
        guard count <= lines.utf8CodeUnitCount else {
            put(UInt8(ascii: "\n"))
            for _ in 0..<depth * 2 { put(UInt8(ascii: " ")) }
            return
        }
        put(UnsafeBufferPointer(start: lines.utf8Start, count: count))
    }

    /// Comma, newline and indent before a member of the open container.
    private mutating func member() {
        guard depth > 0 else { return }
        let bit: UInt64 = 1 << UInt64(depth)
        if hasMembers & bit != 0 { put(UInt8(ascii: ",")) }
        hasMembers |= bit
        newline()
    }

    /// A member's start, then `"key": ` inside objects.
    private mutating func prefix(_ key: StaticString?) {
        member()
        guard depth > 0, let key else { return }
        // Keys are the writer's own literals: nothing in them needs escaping.
        put(UInt8(ascii: "\""))
        literal(key)
        literal("\": ")
    }

    /// A JSON string with `"`, `\` and control characters escaped.
    private mutating func string(_ value: String) {
        put(UInt8(ascii: "\""))
        // Most values need no escape: scanned and copied whole from the string's storage.
        var value = value
        let copied = value.withUTF8 { utf8 in
            if utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0x7F }) {
                return false
            }
            put(utf8)
            return true
        }
        if copied { return put(UInt8(ascii: "\"")) }
        func hex(_ digit: UInt8) -> UInt8 { digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10 }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): put("\\\"".utf8)
            case UInt8(ascii: "\\"): put("\\\\".utf8)
            case 0x0A: put("\\n".utf8)
            case 0x0D: put("\\r".utf8)
            case 0x09: put("\\t".utf8)
            case 0..<0x20, 0x7F:
                put("\\u00".utf8)
                put(hex(byte >> 4))
                put(hex(byte & 0x0F))
            default: put(byte)
            }
        }
        put(UInt8(ascii: "\""))
    }
}
