@testable import DropFetch
import Foundation

extension TestHTTPServer {
    /// The running server: the listener, its accept thread and one thread per connection.
    ///
    /// Threads hold the engine, not the `TestHTTPServer`, so dropping the last reference to the
    /// server runs its `deinit`, which stops the engine.
    final class Engine: Sendable {
        let state = Locked(State())
        let address: Address
        private let listener: Int32
        /// A pipe made readable for good by `stop()`, to cut every `Socket.wait` short.
        let wakeRead: Int32
        private let wakeWrite: Int32

        init(host: String) throws {
            let pipe = try Socket.pipe()
            do {
                listener = try Socket.listen(host: host)
            } catch {
                Socket.close(pipe.read)
                Socket.close(pipe.write)
                throw error
            }
            wakeRead = pipe.read
            wakeWrite = pipe.write
            address = Socket.localAddress(listener)
        }

        deinit {
            Socket.close(wakeRead)
            Socket.close(wakeWrite)
        }

        var isStopped: Bool { state.withLock { $0.stopped } }

        /// Starts the accept thread.
        func start() {
            state.withLock { $0.liveThreads += 1 }
            let thread = Thread { [self] in acceptLoop() }
            thread.name = "TestHTTPServer accept :\(address.port)"
            thread.start()
        }

        /// Closes the listener and every connection, wakes all waits, and waits (up to 10 s) for
        /// the threads to end, so the port is free and no thread touches the state afterwards.
        func stop() {
            let first = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.stopped = true
                if !state.listenerClosed { Socket.shutdownBoth(listener) }
                for fd in state.connections.values { Socket.shutdownBoth(fd) }
                return true
            }
            if first { Socket.writeByte(wakeWrite) }
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while state.withLock({ $0.liveThreads }) > 0, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.001)
            }
        }

        private func acceptLoop() {
            defer {
                state.withLock {
                    $0.listenerClosed = true
                    Socket.close(listener)
                    $0.liveThreads -= 1
                }
            }
            while !isStopped {
                let fd: Int32
                do {
                    fd = try Socket.accept(listener)
                } catch let error as SocketError where [ECONNABORTED, EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.code) {
                    _ = Socket.wait(for: .milliseconds(10), wake: wakeRead, peer: nil)
                    continue
                } catch {
                    return
                }
                let connectionID = state.withLock { state -> Int? in
                    guard !state.stopped else { return nil }
                    let id = state.nextConnectionID
                    state.nextConnectionID += 1
                    state.acceptedConnections += 1
                    state.connections[id] = fd
                    state.liveThreads += 1
                    return id
                }
                guard let connectionID else {
                    Socket.close(fd)
                    return
                }
                let thread = Thread { [self] in serveConnection(fd: fd, id: connectionID) }
                thread.name = "TestHTTPServer connection \(connectionID)"
                thread.start()
            }
        }

        private func serveConnection(fd: Int32, id: Int) {
            defer {
                state.withLock {
                    $0.connections[id] = nil
                    Socket.close(fd)
                    $0.liveThreads -= 1
                }
            }
            let peer = Socket.peerAddress(fd)
            let local = Socket.localAddress(fd)
            var reader = RequestReader(fd: fd)
            while !isStopped {
                switch reader.next() {
                case .closed:
                    return
                case .malformed(let status):
                    Exchange.sendBare(status: status, fd: fd)
                    return
                case .request(let head):
                    let requestID = state.withLock { $0.begin(head, connectionID: id, peer: peer, local: local) }
                    var exchange = Exchange(engine: self, fd: fd, head: head, requestID: requestID)
                    let keepOpen = exchange.answer()
                    exchange.leaveInFlight()
                    state.withLock { $0.end(requestID) }
                    if !keepOpen { return }
                }
            }
        }
    }
}
