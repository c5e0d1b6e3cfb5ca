/// A parsed `Content-Range` header value (RFC 9110 §14.4): `bytes first-last/complete` or `bytes */complete`.
struct ContentRange: Sendable, Equatable {
    /// nil for the unsatisfied form `bytes */N`.
    var first: Int64?
    var last: Int64?
    /// nil when the server sent `*`.
    var complete: Int64?

    init(first: Int64?, last: Int64?, complete: Int64?) {
        self.first = first
        self.last = last
        self.complete = complete
    }

    init?(_ value: String) {
        let trimmed = value.trimmingWhitespace()
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6).trimmingWhitespace()
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        if halves[1] == "*" {
            complete = nil
        } else {
            guard let total = Int64(halves[1]), total >= 0 else { return nil }
            complete = total
        }
        if halves[0] == "*" {
            guard complete != nil else { return nil }
            first = nil
            last = nil
            return
        }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let low = Int64(bounds[0]), let high = Int64(bounds[1]),
              low >= 0, high >= low else { return nil }
        if let complete, high >= complete { return nil }
        first = low
        last = high
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs, CR and LF (header values, RFC 9110 §5.5).
    func trimmingWhitespace() -> String {
        let bytes = Array(utf8)
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
              let last = bytes.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
