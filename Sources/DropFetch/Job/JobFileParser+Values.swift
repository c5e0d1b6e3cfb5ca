/// Value rules of the job-file keys (docs/job-files.md): URL shape, `dir`, `checksum`, `header`, `max-download-limit`.
extension JobFileParser {
    /// Header names the transfer sets itself for resume and framing; a job may not override them.
    static let reservedHeaders: Set<String> = ["range", "if-range", "content-length", "transfer-encoding"]

    /// Longest `dir=` value, PATH_MAX less the terminating NUL.
    static let maxDirectoryBytes = 4095

    /// True when `url` looks like `scheme://authority…` (RFC 3986 §3) with a non-empty host
    /// (`file:///path` excepted).
    ///
    /// The scheme is not checked against the config's allow-list here. White space and control
    /// characters anywhere are refused; a port, if given, must be digits; an IPv6 host needs its `]`.
    static func isWellFormedURL(_ url: String) -> Bool {
        // ASCII is judged from its byte (control or white space: below 0x21, or DEL); only
        // another scalar needs the Unicode tables.
        if url.unicodeScalars.contains(where: { scalar in
            scalar.isASCII ? scalar.value < 0x21 || scalar.value == 0x7F
                : FileName.isControl(scalar) || scalar.properties.isWhitespace
        }) {
            return false
        }
        var url = url
        return url.withUTF8 { isWellFormedURL(bytes: $0) }
    }

    /// `isWellFormedURL` on a URL's bytes as the job file has them: an ASCII URL is judged byte by
    /// byte, without its string's Unicode scalars walked.
    static func isWellFormedURL(bytes field: ArraySlice<UInt8>) -> Bool {
        guard field.allSatisfy({ $0 < 0x80 }) else { return isWellFormedURL(text(field)) }
        if field.contains(where: { $0 < 0x21 || $0 == 0x7F }) { return false }
        return field.withUnsafeBufferPointer { isWellFormedURL(bytes: $0) }
    }

    /// `file`, compared as bytes (a walk of a literal's `utf8` is generic and slow).
    private static let fileScheme: [UInt8] = Array("file".utf8)

    /// `isWellFormedURL` on the URL's bytes, control characters and white space already refused.
    private static func isWellFormedURL(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = bytes.first, isASCIILetter(first) else { return false }
        var index = 1
        while index < bytes.count, isSchemeByte(bytes[index]) { index += 1 }
        guard bytes[index...].starts(with: "://".utf8) else { return false }
        let start = index + 3
        // RFC 8089 file URLs have an empty authority; the agent refuses them as unsupported_protocol.
        if index == 4, zip(bytes, fileScheme).allSatisfy({ $0 | 0x20 == $1 }) { return true }
        let end = bytes[start...].firstIndex {
            $0 == ASCII.slash || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
        } ?? bytes.count
        var hostPort = bytes[start..<end]
        if let at = hostPort.lastIndex(of: UInt8(ascii: "@")) { hostPort = hostPort[(at + 1)...] }
        let port: Slice<UnsafeBufferPointer<UInt8>>
        if hostPort.first == ASCII.leftBracket {
            guard let close = hostPort.firstIndex(of: ASCII.rightBracket), close > hostPort.startIndex + 1 else {
                return false
            }
            port = hostPort[(close + 1)...]
        } else {
            let colon = hostPort.firstIndex(of: ASCII.colon) ?? hostPort.endIndex
            guard colon > hostPort.startIndex else { return false }
            port = hostPort[colon...]
        }
        guard let portColon = port.first else { return true }
        return portColon == ASCII.colon && port.dropFirst().allSatisfy(isASCIIDigit)
    }

    /// Nil when `dir` is a relative path of valid components (each one passes ``FileName/validate(_:)``).
    static func directoryProblem(_ dir: String) -> String? {
        if dir.isEmpty { return "is empty" }
        if dir.utf8.first == ASCII.slash { return "is an absolute path" }
        if dir.utf8.count > maxDirectoryBytes { return "is longer than \(maxDirectoryBytes) bytes" }
        for component in dir.utf8.split(separator: ASCII.slash, omittingEmptySubsequences: false) {
            let name = String(decoding: component, as: UTF8.self)
            if let problem = FileName.validate(name) { return "component \(quoted(name)) \(problem)" }
        }
        return nil
    }

    /// Parses `ALGORITHM=HEX` with the algorithm `sha-256`, `sha-512` or `md5` (any case).
    static func checksum(_ bytes: ArraySlice<UInt8>, line: Int) throws(JobFileError) -> Checksum {
        let shown = quoted(text(bytes))
        guard let equals = bytes.firstIndex(of: ASCII.equals) else {
            throw JobFileError(line: line, message: "invalid checksum \(shown): expected ALGORITHM=HEX")
        }
        let name = text(trimmed(bytes[..<equals]))
        let hex = trimmed(bytes[(equals + 1)...])
        guard let algorithm = Checksum.Algorithm(rawValue: FileName.asciiLowercased(name)) else {
            throw JobFileError(line: line, message: "invalid checksum \(shown): unknown algorithm"
                               + " \(quoted(name)) (use sha-256, sha-512 or md5)")
        }
        guard hex.allSatisfy({ FileName.hexValue($0) != nil }) else {
            throw JobFileError(line: line, message: "invalid checksum \(shown): digest is not hexadecimal")
        }
        let digits = switch algorithm {
        case .sha256: 64
        case .sha512: 128
        case .md5: 32
        }
        guard hex.count == digits else {
            throw JobFileError(line: line, message: "invalid checksum \(shown): \(algorithm.rawValue)"
                               + " needs \(digits) hex digits, got \(hex.count)")
        }
        return Checksum(algorithm: algorithm, hex: FileName.asciiLowercased(text(hex)))
    }

    /// Nil when `bytes` is `Name: value` with an RFC 9110 token name and a non-empty value.
    ///
    /// The value may hold HTAB but no other control character. An empty value is refused because
    /// libcurl reads `Name:` as "remove this header". Headers in ``reservedHeaders`` are refused.
    static func headerProblem(_ bytes: ArraySlice<UInt8>) -> String? {
        guard let colon = bytes.firstIndex(of: ASCII.colon) else { return "expected 'Name: value'" }
        let name = bytes[..<colon]
        guard !name.isEmpty else { return "the name is empty" }
        guard name.allSatisfy(isTokenByte) else { return "the name is not an HTTP token" }
        let value = trimmed(bytes[(colon + 1)...])
        guard !value.isEmpty else { return "the value is empty" }
        let controls = text(value).unicodeScalars.contains { $0 != "\t" && FileName.isControl($0) }
        guard !controls else { return "the value contains a control character" }
        let lowerName = FileName.asciiLowercased(text(name))
        guard !reservedHeaders.contains(lowerName) else { return "'\(text(name))' is set by dropfetch itself" }
        return nil
    }

    /// Parses a rate: decimal bytes per second with an optional `K`, `M` or `G` (×1024, any case),
    /// at most `Units.maxSize`; `0` means no limit, as in aria2.
    static func rate(_ bytes: ArraySlice<UInt8>, line: Int, key: String = "max-download-limit",
                     unit: String = "bytes per second", example: String = "500K or 2M") throws(JobFileError) -> Int64 {
        let shown = "invalid \(key) \(quoted(text(bytes)))"
        var digits = bytes
        var multiplier: Int64 = 1
        if let last = bytes.last, !isASCIIDigit(last) {
            switch last | 0x20 {
            case UInt8(ascii: "k"): multiplier = 1 << 10
            case UInt8(ascii: "m"): multiplier = 1 << 20
            case UInt8(ascii: "g"): multiplier = 1 << 30
            default:
                throw JobFileError(line: line, message: "\(shown): expected \(unit), such as \(example)")
            }
            digits = bytes.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(isASCIIDigit) else {
            throw JobFileError(line: line, message: "\(shown): expected \(unit), such as \(example)")
        }
        let perSecond = unit.hasSuffix("per second") ? " per second" : ""
        let outOfRange = JobFileError(line: line, message: "\(shown): out of range"
                                      + " (at most \(Units.maxSizeText)\(perSecond))")
        guard let number = Int64(text(digits)) else { throw outOfRange }
        let (value, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow, value <= Units.maxSize else { throw outOfRange }
        return value
    }

    /// Parses `split=` or `max-connection-per-server=`: a decimal count of connections from 1 to 16.
    static func connections(_ key: String, _ bytes: ArraySlice<UInt8>, line: Int) throws(JobFileError) -> Int {
        guard !bytes.isEmpty, bytes.count <= 4, bytes.allSatisfy(isASCIIDigit), let count = Int(text(bytes)),
              (1...Config.Split.maxConnections).contains(count) else {
            throw JobFileError(line: line, message: "invalid \(key) \(quoted(text(bytes))): expected a number of"
                               + " connections from 1 to \(Config.Split.maxConnections)")
        }
        return count
    }

    /// Parses `priority=`: any decimal Int64 with an optional sign.
    static func priority(_ value: String, line: Int) throws(JobFileError) -> Int {
        if let priority = Int64(value) { return Int(priority) }
        let unsigned = value.utf8.first == UInt8(ascii: "-") || value.utf8.first == UInt8(ascii: "+")
            ? value.utf8.dropFirst() : value.utf8[...]
        let range = "\(Int64.min)...\(Int64.max)"
        if !unsigned.isEmpty, unsigned.allSatisfy(isASCIIDigit) {
            throw JobFileError(line: line, message: "priority \(quoted(value)) is out of range \(range)")
        }
        throw JobFileError(line: line, message: "priority \(quoted(value)) is not an integer in \(range)")
    }

    static func isASCIILetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    static func isASCIIDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// RFC 3986 scheme characters after the first letter.
    static func isSchemeByte(_ byte: UInt8) -> Bool {
        FileName.isASCIIAlphanumeric(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }

    /// RFC 9110 §5.6.2 tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        FileName.isASCIIAlphanumeric(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}
