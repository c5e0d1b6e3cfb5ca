import Foundation

extension TestHTTPServer {
    /// How a GET of a stored file is answered under RFC 9110 §14.2 (Range) and §13.1.5 (If-Range).
    enum RangeAnswer: Equatable, Sendable {
        /// 200 with the whole body.
        case full
        /// 206 with bytes `first...last` (inclusive).
        case partial(first: Int, last: Int)
        /// 416 with `Content-Range: bytes */size`.
        case unsatisfiable

        /// Decides the answer for a `Range` header (nil when absent) and an `If-Range` header.
        ///
        /// One `bytes` range is honoured (`N-`, `N-M`, `-SUFFIX`); a syntactically invalid range,
        /// another unit or several ranges are ignored (200), as §14.2 allows. `If-Range` holds when
        /// it is a strong ETag equal to `etag` or a date equal to `lastModified`.
        static func decide(range: String?, ifRange: String?, size: Int, etag: String?, lastModified: String?) -> RangeAnswer {
            guard let range else { return .full }
            if let ifRange = ifRange?.trimmingCharacters(in: .whitespaces) {
                let isTag = ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/")
                let holds = isTag
                    ? !ifRange.hasPrefix("W/") && etag.map { !$0.hasPrefix("W/") && $0 == ifRange } == true
                    : lastModified == ifRange
                if !holds { return .full }
            }
            guard let spec = singleSpec(range) else { return .full }
            switch spec {
            case .from(let first):
                return first < size ? .partial(first: first, last: size - 1) : .unsatisfiable
            case .between(let first, let last):
                return first < size ? .partial(first: first, last: min(last, size - 1)) : .unsatisfiable
            case .suffix(let length):
                return length > 0 && size > 0 ? .partial(first: max(0, size - length), last: size - 1) : .unsatisfiable
            }
        }

        /// The first byte a Range header asks for (0 for a suffix or no valid range).
        static func requestedStart(_ range: String?) -> Int {
            guard let range, let spec = singleSpec(range) else { return 0 }
            switch spec {
            case .from(let first), .between(let first, _): return first
            case .suffix: return 0
            }
        }

        private enum Spec { case from(Int), between(Int, Int), suffix(Int) }

        private static func singleSpec(_ header: String) -> Spec? {
            let trimmed = header.trimmingCharacters(in: .whitespaces)
            guard let equals = trimmed.firstIndex(of: "="),
                  trimmed[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == "bytes" else { return nil }
            let set = trimmed[trimmed.index(after: equals)...]
            let specs = set.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard specs.count == 1, let dash = specs[0].firstIndex(of: "-") else { return nil }
            let firstText = specs[0][..<dash]
            let lastText = specs[0][specs[0].index(after: dash)...]
            let isDigits = { (text: Substring) in !text.isEmpty && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber) }
            switch (isDigits(firstText), isDigits(lastText)) {
            case (true, false) where lastText.isEmpty:
                return Int(firstText).map(Spec.from)
            case (true, true):
                guard let first = Int(firstText), let last = Int(lastText), first <= last else { return nil }
                return .between(first, last)
            case (false, true) where firstText.isEmpty:
                return Int(lastText).map(Spec.suffix)
            default:
                return nil
            }
        }
    }
}
