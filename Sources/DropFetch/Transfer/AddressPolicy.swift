import Glibc

/// `block_private_addresses`: which resolved addresses a transfer may not connect to. Checked on the
/// address libcurl is about to connect (CURLOPT_OPENSOCKETFUNCTION), not on the URL text, so DNS
/// names, redirects and odd spellings (`0x7f.1`, `[::ffff:127.0.0.1]`) cannot get around it.
enum AddressPolicy {
    /// True for loopback, private (RFC 1918, RFC 4193), shared (RFC 6598), link-local (incl.
    /// 169.254.169.254), unspecified, multicast and reserved addresses, also IPv4-mapped ones.
    static func isBlocked(family: Int32, address: UnsafeRawPointer) -> Bool {
        switch family {
        case AF_INET:
            let raw = address.loadUnaligned(as: sockaddr_in.self).sin_addr.s_addr
            return isBlockedIPv4(UInt32(bigEndian: raw))
        case AF_INET6:
            let sockaddr = address.loadUnaligned(as: sockaddr_in6.self)
            let bytes = withUnsafeBytes(of: sockaddr.sin6_addr) { Array($0) }
            return isBlockedIPv6(bytes)
        default:
            return true
        }
    }

    static func isBlockedIPv4(_ address: UInt32) -> Bool {
        func inRange(_ base: UInt32, _ bits: UInt32) -> Bool {
            bits == 0 || address >> (32 - bits) == base >> (32 - bits)
        }
        return inRange(0x0000_0000, 8)       // 0.0.0.0/8 "this network"
            || inRange(0x0A00_0000, 8)       // 10/8
            || inRange(0x6440_0000, 10)      // 100.64/10 carrier-grade NAT
            || inRange(0x7F00_0000, 8)       // 127/8 loopback
            || inRange(0xA9FE_0000, 16)      // 169.254/16 link-local, cloud metadata
            || inRange(0xAC10_0000, 12)      // 172.16/12
            || inRange(0xC000_0000, 24)      // 192.0.0/24 protocol assignments
            || inRange(0xC0A8_0000, 16)      // 192.168/16
            || inRange(0xC612_0000, 15)      // 198.18/15 benchmarking
            || inRange(0xE000_0000, 3)       // 224/4 multicast and 240/4 reserved, broadcast
    }

    static func isBlockedIPv6(_ bytes: [UInt8]) -> Bool {
        guard bytes.count == 16 else { return true }
        if bytes.allSatisfy({ $0 == 0 }) { return true }                                      // ::
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }            // ::1
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {  // ::ffff:a.b.c.d
            return isBlockedIPv4(UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15]))
        }
        if bytes[0..<12] == [0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0][...] {             // 64:ff9b::/96 NAT64
            return isBlockedIPv4(UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15]))
        }
        if bytes[0..<12].allSatisfy({ $0 == 0 }) { return true }                              // ::a.b.c.d (deprecated)
        if bytes[0] & 0xFE == 0xFC { return true }                                            // fc00::/7 unique local
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return true }                        // fe80::/10 link-local
        if bytes[0] == 0xFF { return true }                                                   // ff00::/8 multicast
        return false
    }
}
