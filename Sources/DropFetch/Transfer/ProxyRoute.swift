import Glibc

/// Whether a request goes through a proxy, chosen as libcurl chooses (CURLOPT_PROXY,
/// CURLOPT_NOPROXY, then `<scheme>_proxy`, `all_proxy` and `no_proxy` from the environment).
///
/// Only needed with `block_private_addresses`: through a proxy the agent never connects to the
/// target, so the target is resolved and checked before the request instead of at connect time,
/// and the proxy's own address (often 127.0.0.1) is not refused.
enum ProxyRoute: Sendable, Equatable {
    case direct
    case proxy(String)

    /// The route for a URL with `scheme` and `host`. `explicit` is the configured or job proxy
    /// ("" for none), `noProxy` the configured list; `environment` reads a variable.
    static func choose(scheme: String, host: String, explicit: String?, noProxy: String?,
                       environment: (String) -> String?) -> ProxyRoute {
        let exceptions = noProxy ?? environment("no_proxy") ?? environment("NO_PROXY")
        if let exceptions, matches(host: host, noProxy: exceptions) { return .direct }
        if let explicit { return explicit.isEmpty ? .direct : .proxy(explicit) }
        let name = scheme.lowercased() + "_proxy"
        // libcurl never reads HTTP_PROXY in upper case (it can be set by a CGI request's `Proxy:` header).
        let found = environment(name) ?? (name == "http_proxy" ? nil : environment(name.uppercased()))
            ?? environment("all_proxy") ?? environment("ALL_PROXY")
        guard let found, !found.isEmpty else { return .direct }
        return .proxy(found)
    }

    /// libcurl's `no_proxy` match (Curl_check_noproxy): `*` matches all; a name matches itself and
    /// its subdomains (a leading `.` is ignored); an address matches itself or a `/bits` range.
    static func matches(host rawHost: String, noProxy list: String) -> Bool {
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        let tokens = list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map { $0.lowercased() }
        if tokens == ["*"] { return true }
        let address = IPAddress(host)
        for var token in tokens {
            if let address {
                if token.hasPrefix("["), let close = token.firstIndex(of: "]") {
                    token = String(token[token.index(after: token.startIndex)..<close]) + token[token.index(after: close)...]
                }
                if address.isIn(token) { return true }
                continue
            }
            if token.hasPrefix(".") { token.removeFirst() }
            if token.hasSuffix(".") { token.removeLast() }
            guard !token.isEmpty else { continue }
            if host == token || host.hasSuffix("." + token) { return true }
        }
        return false
    }

    /// The first address of `host` that `block_private_addresses` refuses, or why it could not be
    /// checked; nil when every address is allowed. Resolves with getaddrinfo(3).
    static func blockedTarget(host rawHost: String) -> String? {
        var host = rawHost
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let list else {
            return "\(rawHost) (it could not be resolved here to be checked)"
        }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = current.pointee.ai_addr,
               AddressPolicy.isBlocked(family: current.pointee.ai_family, address: UnsafeRawPointer(address)) {
                var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                _ = getnameinfo(address, current.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST)
                let shown = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return shown == host ? shown : "\(shown) (\(rawHost))"
            }
            entry = current.pointee.ai_next
        }
        return nil
    }
}

/// An IPv4 or IPv6 address as bytes, for `no_proxy` ranges.
private struct IPAddress {
    let bytes: [UInt8]

    init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            return nil
        }
    }

    /// Whether `token` (`address` or `address/bits`) covers this address.
    func isIn(_ token: String) -> Bool {
        let parts = token.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let network = IPAddress(first), network.bytes.count == bytes.count else { return false }
        let bits = parts.count == 2 ? Int(parts[1]) ?? -1 : bytes.count * 8
        guard bits >= 0, bits <= bytes.count * 8 else { return false }
        for index in 0..<bytes.count {
            let left = bits - index * 8
            if left <= 0 { break }
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if bytes[index] & mask != network.bytes[index] & mask { return false }
        }
        return true
    }
}
