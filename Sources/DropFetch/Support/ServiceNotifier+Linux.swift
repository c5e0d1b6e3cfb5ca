import Glibc

extension ServiceNotifier {
    /// The sending end of sd_notify(3): an unbound `AF_UNIX` datagram socket (socket(2)) and the
    /// service manager's address, a file path or, for a name starting with `@`, a name in the
    /// abstract namespace (unix(7)). It stays open for the agent's life, close-on-exec.
    final class NotifySocket {
        private let descriptor: FileDescriptor
        private var address = sockaddr_un()
        private let addressLength: socklen_t

        /// Checks `address` (`/path` or `@name`, fitting `sun_path`) and opens the socket.
        init(address text: String) throws(SystemError) {
            let bytes = Array(text.utf8)
            let abstract = bytes.first == UInt8(ascii: "@")
            guard abstract || bytes.first == UInt8(ascii: "/"), bytes.count > 1 else {
                throw SystemError(code: EAFNOSUPPORT, operation: "NOTIFY_SOCKET", path: text)
            }
            let capacity = MemoryLayout.size(ofValue: address.sun_path)
            // A path needs room for its terminating NUL; an abstract name is counted by length.
            guard abstract ? bytes.count <= capacity : bytes.count < capacity, !bytes.contains(0) else {
                throw SystemError(code: ENAMETOOLONG, operation: "NOTIFY_SOCKET", path: text)
            }
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { path in
                path.copyBytes(from: bytes)
                if abstract { path[0] = 0 }
            }
            let offset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
            addressLength = socklen_t(offset + bytes.count + (abstract ? 0 : 1))
            let fd = try retryingEINTR("socket", text) {
                Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            }
            descriptor = FileDescriptor(rawValue: fd, path: text)
        }

        /// Sends `message` as one datagram (sendto(2)); never blocks the loop (`MSG_DONTWAIT`) and
        /// never raises SIGPIPE.
        func send(_ message: String) throws(SystemError) {
            let bytes = Array(message.utf8)
            let fd = descriptor.rawValue
            let length = addressLength
            let path = descriptor.path
            var target = address
            let sent: Result<Int, SystemError> = withUnsafePointer(to: &target) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    bytes.withUnsafeBytes { buffer in
                        Result { () throws(SystemError) in
                            try retryingEINTR("sendto", path) {
                                Glibc.sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT),
                                             socketAddress, length)
                            }
                        }
                    }
                }
            }
            _ = try sent.get()
        }
    }
}
