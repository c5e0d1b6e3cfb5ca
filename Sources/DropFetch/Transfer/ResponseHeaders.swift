/// The status and headers of one HTTP response, as the header callback sees them line by line.
struct ResponseHeaders: Sendable {
    private(set) var status = 0
    /// The values of `ResponseHeaders.kept`, by position (empty until one arrives).
    private var values: [String?] = []

    /// The headers the agent reads (lower case); the others are skipped without a string made
    /// for them (a small job's response carries about ten).
    private static let names = [
        "content-range", "content-length", "etag", "last-modified", "accept-ranges", "date",
        "content-disposition", "location",
    ]
    private static let kept: [[UInt8]] = names.map { Array($0.utf8) }

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

    /// One `Name: value` line of a header the agent reads: the name matched without case (ASCII,
    /// as RFC 9110 names are), the value kept without surrounding blanks.
    mutating func add(_ line: UnsafeRawBufferPointer) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
              let position = ResponseHeaders.kept.firstIndex(where: { name in
                  name.count == colon && zip(name, line).allSatisfy { wanted, byte in
                      wanted == (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
                  }
              }) else { return }
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = colon + 1
        var end = line.count
        while start < end, isBlank(line[start]) { start += 1 }
        while end > start, isBlank(line[end - 1]) { end -= 1 }
        if values.isEmpty { values = Array(repeating: nil, count: ResponseHeaders.kept.count) }
        values[position] = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }

    /// The value of header `name` (lower case), when it is one the agent reads and it came.
    subscript(name: String) -> String? {
        // String == (short names compare as two words), not a walk of `name.utf8`: a few lookups a job.
        guard !values.isEmpty, let position = ResponseHeaders.names.firstIndex(of: name) else {
            return nil
        }
        return values[position]
    }

    /// 301, 302, 303, 307 or 308 (RFC 9110 §15.4), without an array made to ask.
    static func isRedirect(_ status: Int) -> Bool {
        switch status {
        case 301, 302, 303, 307, 308: true
        default: false
        }
    }

    /// False for interim (1xx) responses and redirects that libcurl will follow.
    func isFinal(following: Bool) -> Bool {
        if (100...199).contains(status) { return false }
        if following, ResponseHeaders.isRedirect(status), self["location"] != nil { return false }
        return true
    }

    /// The `Location` of a redirect (301, 302, 303, 307, 308), which the agent follows itself;
    /// nil for any other answer and for an empty `Location` (which libcurl ignores too).
    var redirectLocation: String? {
        guard ResponseHeaders.isRedirect(status), let location = self["location"], !location.isEmpty else { return nil }
        return location
    }

}
