import CLinux
import Glibc

/// SIGTERM, SIGINT, SIGHUP and SIGCHLD (a hook ended) delivered as readable events on a
/// signalfd(2), so the event loop handles them like any other descriptor. The signals must be
/// blocked in every thread first.
final class SignalSource {
    enum Signal: Sendable { case terminate, interrupt, hangup, child }

    private let descriptor: FileDescriptor

    var fileDescriptor: Int32 { descriptor.rawValue }

    static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGCHLD]

    /// Blocks the handled signals in the calling thread (pthread_sigmask(3)); call before threads start.
    static func blockHandledSignals() {
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in handled { sigaddset(&mask, signal) }
        pthread_sigmask(SIG_BLOCK, &mask, nil)
    }

    init() throws(SystemError) {
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in SignalSource.handled { sigaddset(&mask, signal) }
        let fd = try retryingEINTR("signalfd") { signalfd(-1, &mask, Int32(SFD_NONBLOCK | SFD_CLOEXEC)) }
        descriptor = FileDescriptor(rawValue: fd, path: "signalfd")
    }

    /// Reads the pending signals without blocking.
    func drain() -> [Signal] {
        var result: [Signal] = []
        var info = signalfd_siginfo()
        let size = MemoryLayout<signalfd_siginfo>.size
        while Glibc.read(descriptor.rawValue, &info, size) == size {
            switch Int32(info.ssi_signo) {
            case SIGTERM: result.append(.terminate)
            case SIGINT: result.append(.interrupt)
            case SIGHUP: result.append(.hangup)
            case SIGCHLD: if !result.contains(.child) { result.append(.child) }
            default: break
            }
        }
        return result
    }
}
