/// The status and headers of one HTTP response, as the header callback sees them line by line.
struct ResponseHeaders: Sendable {
    private(set) var status = 0
    private var fields: [String: String] = [:]

    init() {}

    /// Starts a response from its status line (`HTTP/1.1 206 Partial Content`).
    init(statusLine: String) {
        var text = statusLine
        self = text.withUTF8 { ResponseHeaders(statusLine: UnsafeRawBufferPointer($0)) }
    }

    /// The same from the line's bytes, as the header callback gets them: the code is the
    /// second field, when it is all digits (`HTTP/2 200` has no reason phrase).
    init(statusLine line: UnsafeRawBufferPointer) {
        guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return }
        var code = 0
        var digits = 0
        for byte in line[(space + 1)...] {
            guard byte != UInt8(ascii: " "), byte != 0x0D, byte != 0x0A else { break }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 9 else { return }
            code = code * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        if digits > 0 { status = code }
    }

    mutating func add(_ line: String) {
        var text = line
        text.withUTF8 { add(UnsafeRawBufferPointer($0)) }
    }

    /// One `Name: value` line: the name lower-cased (ASCII, as RFC 9110 names are), the value
    /// without surrounding blanks; worked on the bytes, one string each for name and value.
    mutating func add(_ line: UnsafeRawBufferPointer) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(unsafeUninitializedCapacity: colon) { buffer in
            for index in 0..<colon {
                let byte = line[index]
                buffer[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            }
            return colon
        }
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = colon + 1
        var end = line.count
        while start < end, isBlank(line[start]) { start += 1 }
        while end > start, isBlank(line[end - 1]) { end -= 1 }
        fields[name] = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }

    subscript(name: String) -> String? { fields[name] }

    /// False for interim (1xx) responses and redirects that libcurl will follow.
    func isFinal(following: Bool) -> Bool {
        if (100...199).contains(status) { return false }
        if following, [301, 302, 303, 307, 308].contains(status), fields["location"] != nil { return false }
        return true
    }

    /// The `Location` of a redirect (301, 302, 303, 307, 308), which the agent follows itself;
    /// nil for any other answer and for an empty `Location` (which libcurl ignores too).
    var redirectLocation: String? {
        guard [301, 302, 303, 307, 308].contains(status), let location = fields["location"], !location.isEmpty else { return nil }
        return location
    }

}
