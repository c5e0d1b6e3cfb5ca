import CLinux
import Glibc

/// A failed system call: the errno it set, what was attempted, and on which path.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int32
    public var operation: String
    public var path: String?

    public init(code: Int32, operation: String, path: String? = nil) {
        self.code = code
        self.operation = operation
        self.path = path
    }

    /// Captures the calling thread's errno right after a failed call.
    static func current(_ operation: String, _ path: String? = nil) -> SystemError {
        SystemError(code: dfl_errno(), operation: operation, path: path)
    }

    public var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }

    public var description: String {
        let reason = String(cString: strerror(code))
        if let path { return "\(operation) \(path): \(reason)" }
        return "\(operation): \(reason)"
    }
}

/// Runs a system call, retrying on EINTR, and turns -1 into a `SystemError`. The path is built
/// only for an error: joining it on every call cost a small job more than its stat(2)s.
@inline(__always)
func retryingEINTR<T: BinaryInteger>(
    _ operation: @autoclosure () -> String, _ path: @autoclosure () -> String? = nil, _ call: () -> T
) throws(SystemError) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = dfl_errno()
        if code == EINTR { continue }
        throw SystemError(code: code, operation: operation(), path: path())
    }
}

/// `retryingEINTR` for calls where an errno or two are answers rather than failures (ENOENT for
/// "nothing there"): those return nil. Two at most, named one by one: a variadic list would
/// allocate an array on every call.
@inline(__always)
func retryingEINTR<T: BinaryInteger>(
    _ operation: @autoclosure () -> String, _ path: @autoclosure () -> String?, tolerating first: Int32, _ second: Int32? = nil,
    call: () -> T
) throws(SystemError) -> T? {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = dfl_errno()
        if code == EINTR { continue }
        if code == first || code == second { return nil }
        throw SystemError(code: code, operation: operation(), path: path())
    }
}
