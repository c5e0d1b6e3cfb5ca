import Glibc

extension TestHTTPServer {
    /// A failed system call of the test server, with the errno it left.
    struct SocketError: Error, CustomStringConvertible {
        let call: String
        let code: Int32

        var description: String { "\(call): \(String(cString: strerror(code))) (errno \(code))" }
    }

    /// Thin wrappers over the BSD socket calls the test server makes; EINTR is retried here.
    ///
    /// Descriptors are plain `Int32`s owned by exactly one thread (the accept thread owns the
    /// listener, each connection thread its socket), which closes them when it ends.
    enum Socket {
        /// `POLLRDHUP` from <poll.h>, which Glibc's Swift overlay does not import.
        static let pollReadHangUp: Int16 = 0x2000

        /// socket(2) + setsockopt(SO_REUSEADDR) + bind(2) + listen(2) on an IPv4 address, port 0.
        static func listen(host: String) throws -> Int32 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                throw SocketError(call: "inet_pton(\(host))", code: EINVAL)
            }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw SocketError(call: "socket", code: errno) }
            do {
                var one: Int32 = 1
                guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                    throw SocketError(call: "setsockopt(SO_REUSEADDR)", code: errno)
                }
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard bound == 0 else { throw SocketError(call: "bind(\(host))", code: errno) }
                guard Glibc.listen(fd, 128) == 0 else { throw SocketError(call: "listen", code: errno) }
                return fd
            } catch {
                close(fd)
                throw error
            }
        }

        /// accept4(2) with SOCK_CLOEXEC so processes the tests spawn never inherit the connection,
        /// not even one started between the accept and a later fcntl, and TCP_NODELAY so a small
        /// header write is not held back by Nagle's algorithm waiting for a delayed ACK.
        static func accept(_ listener: Int32) throws -> Int32 {
            while true {
                let fd = acceptCloseOnExec(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                if fd >= 0 {
                    var one: Int32 = 1
                    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return fd
                }
                if errno != EINTR { throw SocketError(call: "accept", code: errno) }
            }
        }

        /// getsockname(2) as an `Address`.
        static func localAddress(_ fd: Int32) -> Address {
            address(fd, getsockname)
        }

        /// getpeername(2) as an `Address`.
        static func peerAddress(_ fd: Int32) -> Address {
            address(fd, getpeername)
        }

        private static func address(
            _ fd: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
        ) -> Address {
            var storage = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let result = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) }
            }
            guard result == 0 else { return Address(host: "?", port: 0) }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            inet_ntop(AF_INET, &storage.sin_addr, &text, socklen_t(text.count))
            let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return Address(host: host, port: Int(UInt16(bigEndian: storage.sin_port)))
        }

        /// recv(2) into `buffer`; 0 means the peer closed its side.
        static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            while true {
                let n = recv(fd, buffer.baseAddress, buffer.count, 0)
                if n >= 0 { return n }
                if errno != EINTR { throw SocketError(call: "recv", code: errno) }
            }
        }

        /// send(2) of all of `bytes` with MSG_NOSIGNAL, so a closed peer gives EPIPE instead of SIGPIPE.
        static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
            var offset = 0
            while offset < bytes.count {
                let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if n >= 0 {
                    offset += n
                } else if errno != EINTR {
                    throw SocketError(call: "send", code: errno)
                }
            }
        }

        /// shutdown(2) of both directions; wakes a thread blocked in accept, recv or send on `fd`.
        static func shutdownBoth(_ fd: Int32) {
            _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        }

        /// close(2); EINTR is not retried, as on Linux the descriptor is released anyway.
        static func close(_ fd: Int32) {
            _ = Glibc.close(fd)
        }

        /// pipe2(2) with O_CLOEXEC on both ends, returning (read end, write end).
        static func pipe() throws -> (read: Int32, write: Int32) {
            var fds: [Int32] = [-1, -1]
            guard pipeCloseOnExec(&fds, O_CLOEXEC) == 0 else { throw SocketError(call: "pipe2", code: errno) }
            return (fds[0], fds[1])
        }

        /// write(2) of one byte, used to make the wake pipe readable for good.
        static func writeByte(_ fd: Int32) {
            var byte: UInt8 = 1
            while write(fd, &byte, 1) < 0 && errno == EINTR {}
        }

        /// What ended a `wait(for:wake:peer:)`.
        enum WaitOutcome { case elapsed, woken, peerClosed }

        /// poll(2) on the wake pipe and, for hang-ups only, the peer socket, until `duration` passes.
        static func wait(for duration: Duration, wake: Int32, peer: Int32?) -> WaitOutcome {
            let deadline = ContinuousClock.now.advanced(by: duration)
            var watchPeer = peer != nil
            while true {
                let left = ContinuousClock.now.duration(to: deadline)
                if left <= .zero { return .elapsed }
                var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                if watchPeer, let peer { fds.append(pollfd(fd: peer, events: pollReadHangUp, revents: 0)) }
                let result = poll(&fds, nfds_t(fds.count), milliseconds(left))
                if result < 0 {
                    if errno == EINTR { continue }
                    return .woken
                }
                if fds[0].revents != 0 { return .woken }
                if fds.count > 1 {
                    let hangUp = pollReadHangUp | Int16(POLLHUP) | Int16(POLLERR)
                    if fds[1].revents & hangUp != 0 { return .peerClosed }
                    // Only pipelined request bytes: stop watching the peer, or poll would spin.
                    if fds[1].revents != 0 { watchPeer = false }
                }
            }
        }

        private static func milliseconds(_ duration: Duration) -> Int32 {
            let (seconds, attoseconds) = duration.components
            let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            return Int32(clamping: max(1, ms))
        }
    }
}

/// glibc's accept4(2), which Swift's Glibc overlay does not import.
@_silgen_name("accept4")
private func acceptCloseOnExec(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?,
                               _ length: UnsafeMutablePointer<socklen_t>?, _ flags: Int32) -> Int32

/// glibc's pipe2(2), which Swift's Glibc overlay does not import.
@_silgen_name("pipe2")
private func pipeCloseOnExec(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
