import Glibc

/// The status and headers of one HTTP response, as the header callback sees them line by line.
struct ResponseHeaders: Sendable {
    /// The headers the agent reads; the others are skipped without a string made for them (a
    /// small job's response carries about ten).
    enum Name: Int, CaseIterable, Sendable {
        case contentRange, contentLength, etag, lastModified, acceptRanges, date, contentDisposition, location

        /// The name in lower case, as it is matched.
        var text: StaticString {
            switch self {
            case .contentRange: "content-range"
            case .contentLength: "content-length"
            case .etag: "etag"
            case .lastModified: "last-modified"
            case .acceptRanges: "accept-ranges"
            case .date: "date"
            case .contentDisposition: "content-disposition"
            case .location: "location"
            }
        }

        /// The header named `bytes` (ASCII without case, as RFC 9110 names are): the length and
        /// the first byte pick the one candidate, which is then compared whole.
        static func matching(_ bytes: UnsafeRawBufferPointer) -> Name? {
            guard let first = bytes.first else { return nil }
            let candidate: Name
            switch bytes.count {
            case 4: candidate = lowered(first) == UInt8(ascii: "e") ? .etag : .date
            case 8: candidate = .location
            case 13:
                switch lowered(first) {
                case UInt8(ascii: "c"): candidate = .contentRange
                case UInt8(ascii: "l"): candidate = .lastModified
                default: candidate = .acceptRanges
                }
            case 14: candidate = .contentLength
            case 19: candidate = .contentDisposition
            default: return nil
            }
            let wanted = candidate.text.utf8Start
            for offset in 0..<bytes.count where lowered(bytes[offset]) != wanted[offset] { return nil }
            return candidate
        }

        private static func lowered(_ byte: UInt8) -> UInt8 {
            byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
        }
    }

    private(set) var status = 0
    /// The values of the headers read, by `Name`, inline (no array made per response).
    private var values: [8 of String?] = .init(repeating: nil)

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

    /// One `Name: value` line of a header the agent reads, the value kept without surrounding blanks.
    mutating func add(_ line: UnsafeRawBufferPointer) {
        guard let base = line.baseAddress, let found = memchr(base, Int32(UInt8(ascii: ":")), line.count) else { return }
        let colon = UnsafeRawPointer(found) - base
        guard let name = Name.matching(UnsafeRawBufferPointer(rebasing: line[..<colon])) else { return }
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = colon + 1
        var end = line.count
        while start < end, isBlank(line[start]) { start += 1 }
        while end > start, isBlank(line[end - 1]) { end -= 1 }
        values[name.rawValue] = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }

    /// The value of header `name`, when it came.
    subscript(name: Name) -> String? {
        values[name.rawValue]
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
        if following, ResponseHeaders.isRedirect(status), self[.location] != nil { return false }
        return true
    }

    /// The `Location` of a redirect (301, 302, 303, 307, 308), which the agent follows itself;
    /// nil for any other answer and for an empty `Location` (which libcurl ignores too).
    var redirectLocation: String? {
        guard ResponseHeaders.isRedirect(status), let location = self[.location], !location.isEmpty else { return nil }
        return location
    }
}
