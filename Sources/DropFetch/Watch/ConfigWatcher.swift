import CLinux

/// Watches the config file's folder: editors save by writing a temp file and renaming it over the
/// old one, so the file itself cannot be watched.
final class ConfigWatcher {
    private let inotify: InotifyDescriptor
    private let fileName: String

    var fileDescriptor: Int32 { inotify.fileDescriptor }

    init(configPath: String) throws(SystemError) {
        fileName = FileSystem.baseName(of: configPath)
        inotify = try InotifyDescriptor("config")
        _ = try inotify.watch(FileSystem.directoryName(of: configPath), mask: Int32(IN_CLOSE_WRITE | IN_MOVED_TO))
    }

    /// True when the config file was written or replaced since the last call.
    func drainChanged() -> Bool {
        inotify.drain().contains { $0.has(Int32(IN_Q_OVERFLOW)) || $0.name == fileName }
    }
}
