import Glibc

/// Whether a request goes through a proxy, chosen as libcurl chooses (CURLOPT_PROXY,
/// CURLOPT_NOPROXY, then `<scheme>_proxy`, `all_proxy` and `no_proxy` from the environment).
///
/// Only needed with `block_private_addresses`: through a proxy the agent never connects to the
/// target, so the target is resolved and checked before the request as well (docs/security.md
/// "Proxies" says which proxy's own address is checked).
enum ProxyRoute: Sendable, Equatable {
    case direct
    case proxy(String)

    /// Whose proxy a transfer goes through under `block_private_addresses`.
    enum Use: Sendable, Equatable {
        case none
        /// The job's `all-proxy`: its address is checked like any other.
        case job
        /// The config's `proxy` or a `*_proxy` variable: its address is not checked.
        case trusted
    }

    /// True when this process's environment names no `*_proxy` variable (any case), read once:
    /// a transfer then sets CURLOPT_PROXY and CURLOPT_NOPROXY to "" and libcurl reads no
    /// variable for it (getenv(3) walks the whole environment, several times a transfer).
    static let environmentNamesNone: Bool = {
        var index = 0
        while let entry = environ[index] {
            index += 1
            let name = String(cString: entry).prefix { $0 != "=" }
            if name.lowercased().hasSuffix("_proxy") { return false }
        }
        return true
    }()

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

    /// What the agent's own lookup of a target found under `block_private_addresses`.
    enum TargetCheck: Sendable, Equatable {
        /// The first refused address, or why the name could not be checked.
        case blocked(String)
        /// Every address is allowed; `address` is the first, numeric, for CURLOPT_CONNECT_TO.
        case allowed(address: String)
    }

    /// Resolves `host` once with getaddrinfo(3) and checks every address it gives: one refused
    /// address refuses the host, so a name that also points inside cannot be let through.
    static func checkTarget(host rawHost: String) -> TargetCheck {
        var host = rawHost
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let list else {
            return .blocked("\(rawHost) (it could not be resolved here to be checked)")
        }
        defer { freeaddrinfo(list) }
        var first: String?
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            entry = current.pointee.ai_next
            guard let address = current.pointee.ai_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            _ = getnameinfo(address, current.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST)
            let shown = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if AddressPolicy.isBlocked(family: current.pointee.ai_family, address: UnsafeRawPointer(address)) {
                return .blocked(shown == host ? shown : "\(shown) (\(rawHost))")
            }
            if first == nil, !shown.isEmpty { first = shown }
        }
        guard let first else { return .blocked("\(rawHost) (it resolved to no address)") }
        return .allowed(address: first)
    }

    /// The CURLOPT_CONNECT_TO entry that makes a trusted proxy reach `address` (the one the agent
    /// checked) on `port` for any host: the proxy is asked `CONNECT address:port` (or given the
    /// address over SOCKS) and never resolves the name itself. Nil when `host` is an IP literal,
    /// which no lookup can change.
    static func pinnedConnection(host rawHost: String, port: Int, address: String) -> String? {
        var host = rawHost
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard IPAddress(host) == nil else { return nil }
        let shown = address.contains(":") ? "[\(address)]" : address
        return "::\(shown):\(port)"
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
