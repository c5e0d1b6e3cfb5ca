@testable import DropFetch
import Testing

@Suite("block_private_addresses")
struct AddressPolicyTests {
    private func v4(_ text: String) -> UInt32 {
        text.split(separator: ".").reduce(UInt32(0)) { $0 << 8 | UInt32($1)! }
    }

    @Test("private, loopback, link-local and reserved IPv4 ranges are blocked", arguments: [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "169.254.169.254", "0.0.0.0", "100.64.0.1", "224.0.0.1", "255.255.255.255", "198.18.0.1",
    ])
    func blockedIPv4(address: String) {
        #expect(AddressPolicy.isBlockedIPv4(v4(address)))
    }

    @Test("public IPv4 addresses pass", arguments: ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "1.1.1.1"])
    func publicIPv4(address: String) {
        #expect(!AddressPolicy.isBlockedIPv4(v4(address)))
    }

    @Test("IPv6 loopback, unspecified, ULA, link-local, multicast and mapped private IPv4 are blocked")
    func ipv6() {
        var loopback = [UInt8](repeating: 0, count: 16)
        loopback[15] = 1
        #expect(AddressPolicy.isBlockedIPv6(loopback))
        #expect(AddressPolicy.isBlockedIPv6([UInt8](repeating: 0, count: 16)))
        #expect(AddressPolicy.isBlockedIPv6([0xFD] + [UInt8](repeating: 0, count: 15)))
        #expect(AddressPolicy.isBlockedIPv6([0xFE, 0x80] + [UInt8](repeating: 0, count: 14)))
        #expect(AddressPolicy.isBlockedIPv6([0xFF, 0x02] + [UInt8](repeating: 0, count: 14)))
        let mappedLoopback = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 127, 0, 0, 1]
        #expect(AddressPolicy.isBlockedIPv6(mappedLoopback))
        let mappedPublic = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 93, 184, 216, 34]
        #expect(!AddressPolicy.isBlockedIPv6(mappedPublic))
        let global = [0x26, 0x06, 0x28, 0x00, 0x02, 0x20, 0, 1, 0x02, 0x48, 0x18, 0x93, 0x25, 0xC8, 0x19, 0x46] as [UInt8]
        #expect(!AddressPolicy.isBlockedIPv6(global))
    }
}
