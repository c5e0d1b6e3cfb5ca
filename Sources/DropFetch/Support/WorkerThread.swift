import Glibc

/// pthread_create(3) of a `@Sendable` closure: what the new thread gets is that closure alone, so
/// the compiler checks everything it captures. It travels through the start routine's one
/// argument as a retained box that the thread takes over.
enum WorkerThread {
    private final class Start: Sendable {
        let body: @Sendable () -> Void

        init(_ body: @escaping @Sendable () -> Void) {
            self.body = body
        }
    }

    /// Starts a thread running `body`; the caller joins it (pthread_join(3)).
    static func start(_ operation: String, path: String? = nil,
                      _ body: @escaping @Sendable () -> Void) throws(SystemError) -> pthread_t {
        let context = Unmanaged.passRetained(Start(body)).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { raw in
            Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw SystemError(code: status, operation: operation, path: path)
        }
        return handle
    }
}
