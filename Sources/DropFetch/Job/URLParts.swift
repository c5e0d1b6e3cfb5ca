import Glibc

/// The scheme and host of a URL string, enough for the protocol allow-list and per-host limits,
/// as libcurl's own parser reads them (`CurlURL`, curl_url(3)): the host a limit counts is the host
/// the request goes to, whatever a hostile URL looks like. Nil when libcurl cannot parse it.
struct URLParts: Sendable, Equatable {
    var scheme: String
    var host: String
    /// True when the authority has a `user[:password]@` part.
    var hasUserInfo: Bool

    init?(_ url: String) {
        if let plain = URLParts.plain(url) {
            self = plain
            return
        }
        guard let parsed = try? CurlURL(url), let scheme = parsed.scheme else { return nil }
        self.scheme = scheme
        host = parsed.host ?? ""
        hasUserInfo = parsed.user != nil || parsed.password != nil
    }

    init(scheme: String, host: String, hasUserInfo: Bool) {
        self.scheme = scheme
        self.host = host
        self.hasUserInfo = hasUserInfo
    }

    /// The parts of a plain `http(s)://name[:port]/…` URL read without libcurl (curl_url_set costs
    /// about 15 K instructions a job), nil for anything else, which libcurl reads. Plain means a
    /// form libcurl can only read one way: printable ASCII with no `\`, a host of letters, digits,
    /// dots and hyphens in non-empty labels that is not a number libcurl would rewrite (`0x7f.1`,
    /// `127.1`; a canonical dotted quad is kept), no userinfo, no `%`, a port of 1–65535.
    static func plain(_ url: String) -> URLParts? {
        var url = url
        guard let parts = url.withUTF8({ URLParts.plainParts($0) }) else { return nil }
        return URLParts(scheme: parts.https ? "https" : "http", host: parts.host, hasUserInfo: false)
    }

    private static func plainParts(_ bytes: UnsafeBufferPointer<UInt8>) -> (https: Bool, host: String)? {
        // libcurl's own limit is 8 MB (CURL_MAX_INPUT_LENGTH); long URLs are rare enough to leave to it.
        guard bytes.count <= 8000 else { return nil }
        for byte in bytes where byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\\") { return nil }
        let https: Bool
        if bytes.starts(with: "http://".utf8) {
            https = false
        } else if bytes.starts(with: "https://".utf8) {
            https = true
        } else {
            return nil
        }
        let start = https ? 8 : 7
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") {
            end += 1
        }
        var hostEnd = end
        if let colon = bytes[start..<end].firstIndex(of: UInt8(ascii: ":")) {
            guard isPort(bytes[(colon + 1)..<end]) else { return nil }
            hostEnd = colon
        }
        let host = UnsafeBufferPointer(rebasing: bytes[start..<hostEnd])
        guard isPlainHost(host) else { return nil }
        return (https, String(unsafeUninitializedCapacity: host.count) { out in
            for (index, byte) in host.enumerated() {
                out[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            }
            return host.count
        })
    }

    /// 1–65535 in decimal without a leading zero.
    private static func isPort(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard (1...5).contains(digits.count), digits.first != UInt8(ascii: "0") else { return false }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value <= 65535
    }

    /// Non-empty labels of letters, digits and hyphens, none starting or ending with a hyphen;
    /// when every label starts with a digit (a form libcurl may read as an IPv4 number and rewrite),
    /// only a canonical dotted quad.
    private static func isPlainHost(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !host.isEmpty, host.count <= 253 else { return false }
        var labels = 0
        var numericLabels = 0
        var canonicalOctets = true
        var labelStart = 0
        for index in 0...host.count {
            guard index == host.count || host[index] == UInt8(ascii: ".") else {
                let byte = host[index] | 0x20
                let isLetter = byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
                let isDigit = host[index] >= UInt8(ascii: "0") && host[index] <= UInt8(ascii: "9")
                guard isLetter || isDigit || host[index] == UInt8(ascii: "-") else { return false }
                continue
            }
            let label = host[labelStart..<index]
            guard let first = label.first, let last = label.last,
                  first != UInt8(ascii: "-"), last != UInt8(ascii: "-") else { return false }
            labels += 1
            if first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") {
                numericLabels += 1
                canonicalOctets = canonicalOctets && isOctet(label)
            }
            labelStart = index + 1
        }
        return numericLabels < labels || (labels == 4 && canonicalOctets)
    }

    /// 0–255 in decimal without a leading zero.
    private static func isOctet(_ label: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard (1...3).contains(label.count), label.count == 1 || label.first != UInt8(ascii: "0") else { return false }
        var value = 0
        for byte in label {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value <= 255
    }

    /// fnmatch(3) glob match, as used by class rules (`*.iso`, `*.example.org`).
    static func glob(_ pattern: String, matches text: String) -> Bool {
        fnmatch(pattern, text, 0) == 0
    }
}
