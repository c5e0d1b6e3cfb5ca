@testable import DropFetch
import Foundation
import Testing

/// docs/status-files.md kind `blocked`: an address refused by `block_private_addresses` is reported as
/// such (not as `network`), is not retried, and does not stop the other mirrors from being tried.
@Suite("block_private_addresses: kind blocked, end to end")
struct BlockedAddressTests {
    @Test("a loopback server with block_private_addresses: true is blocked, before any request, without retries")
    func firstRequest() throws {
        let server = try TestHTTPServer()
        server.serve("/b.bin", body: TestHTTPServer.randomBytes(1_000, seed: 110))
        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\n")
        try fixture.drop("b.url", server.url("/b.bin") + "\n")

        #expect(try fixture.runOnce() == 1)

        let status = try fixture.status("failed", "b.url")
        #expect(status.error?.kind == .blocked, "\(String(describing: status.error))")
        #expect(status.error?.message.contains("block_private_addresses") == true)
        #expect(status.attempts == 1)
        #expect(status.downloads.first?.error?.kind == .blocked)
        let json = try fixture.statusJSON("failed", "b.url")
        #expect((json["error"] as? [String: Any])?["kind"] as? String == "blocked")
        #expect(server.requests.isEmpty)
        #expect(fixture.destinationNames().isEmpty)
    }

    @Test("a blocked mirror moves on to the next mirror (also blocked here: every test host is loopback)")
    func otherMirrorsAreTried() throws {
        let first = try TestHTTPServer()
        let second = try TestHTTPServer(host: "127.0.0.2")
        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\n")
        let mirrors = [first.url("/m.bin"), second.url("/m.bin")]
        try fixture.drop("m.url", mirrors.joined(separator: "\t") + "\n")

        #expect(try fixture.runOnce() == 1)

        let status = try fixture.status("failed", "m.url")
        #expect(status.error?.kind == .blocked)
        #expect(status.attempts == 1)
        #expect(status.downloads.first?.url == mirrors[1], "the second mirror was not tried")
        #expect(first.requests.isEmpty && second.requests.isEmpty)
    }

    /// An IPv4 address of this machine that `block_private_addresses` lets through (the address of
    /// an interface on a documentation or public network), to stand in for an allowed host.
    static let allowedLocalAddress: String? = {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let list else { return nil }
        defer { freeifaddrs(list) }
        var entry: UnsafeMutablePointer<ifaddrs>? = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, Int32(address.pointee.sa_family) == AF_INET else { continue }
            var ipv4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            if AddressPolicy.isBlockedIPv4(UInt32(bigEndian: ipv4.sin_addr.s_addr)) { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            guard inet_ntop(AF_INET, &ipv4.sin_addr, &text, socklen_t(text.count)) != nil else { continue }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return nil
    }()

    @Test("a redirect from an allowed host to a loopback address is blocked at the hop",
          .enabled(if: allowedLocalAddress != nil, "this machine has no interface address that block_private_addresses allows"))
    func redirectHop() throws {
        let allowed = try TestHTTPServer(host: try #require(Self.allowedLocalAddress))
        let loopback = try TestHTTPServer()
        loopback.serve("/inside.bin", body: TestHTTPServer.randomBytes(1_000, seed: 111))
        allowed.setFaults("/outside.bin", [.redirect(to: loopback.url("/inside.bin"))])
        let fixture = try SpoolFixture(extraConfig: "block_private_addresses: true\n")
        try fixture.drop("r.url", allowed.url("/outside.bin") + "\n")

        #expect(try fixture.runOnce() == 1)

        #expect(allowed.requests(to: "/outside.bin").count == 1, "the allowed host was not asked (or asked again)")
        #expect(loopback.requests.isEmpty, "the loopback server was reached through the redirect")
        let status = try fixture.status("failed", "r.url")
        #expect(status.error?.kind == .blocked, "\(String(describing: status.error))")
        #expect(status.attempts == 1)
        #expect(status.downloads.first?.url == allowed.url("/outside.bin"))
    }
}
