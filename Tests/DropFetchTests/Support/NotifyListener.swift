import Foundation
import Glibc

/// A stand-in for systemd's notification socket: an `AF_UNIX` datagram socket bound to a file
/// path or to a name in the abstract namespace, whose datagrams a test collects in order.
///
///     let listener = try NotifyListener(abstract: true)
///     // start the agent with NOTIFY_SOCKET=\(listener.address)
///     #expect(try waitUntil { listener.messages().contains("READY=1") })
final class NotifyListener: @unchecked Sendable {
    /// What `NOTIFY_SOCKET` must hold: `/path` or `@name`.
    let address: String
    private let descriptor: Int32
    private let path: String?
    private var received: [String] = []

    /// Binds a fresh socket; `abstract` picks `@name` over a path in the temporary folder.
    init(abstract: Bool) throws {
        let name = "dropfetch-notify-\(UUID().uuidString.prefix(8))"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NotifyListenerError.system("socket", errno) }
        descriptor = fd
        path = abstract ? nil : FileManager.default.temporaryDirectory.path + "/" + name + ".sock"
        address = abstract ? "@" + name : path!
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(address.utf8)
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
            raw.copyBytes(from: bytes)
            if abstract { raw[0] = 0 }
        }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard bound == 0 else {
            close(fd)
            throw NotifyListenerError.system("bind", errno)
        }
    }

    deinit {
        close(descriptor)
        if let path { unlink(path) }
    }

    /// Every datagram received so far, oldest first (reads what is queued without blocking).
    func messages() -> [String] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 { break }
            received.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
        return received
    }
}

enum NotifyListenerError: Error {
    case system(String, Int32)
}
