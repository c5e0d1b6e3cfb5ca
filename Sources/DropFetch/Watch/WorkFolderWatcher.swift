import CLinux

/// Watches the agent's own `work/<agent>/` for job files moved out (`mv` to hold/, `dropfetch
/// hold|cancel`) or deleted by hand, so their transfers stop at once.
final class WorkFolderWatcher {
    private let inotify: InotifyDescriptor

    var fileDescriptor: Int32 { inotify.fileDescriptor }

    init(folder: String) throws(SystemError) {
        inotify = try InotifyDescriptor("work")
        _ = try inotify.watch(folder, mask: Int32(IN_MOVED_FROM | IN_DELETE))
    }

    /// Names of job files that left the folder since the last call.
    func drainDeparted() -> [String] {
        inotify.drain().map(\.name).filter(Spool.isJobName)
    }
}
