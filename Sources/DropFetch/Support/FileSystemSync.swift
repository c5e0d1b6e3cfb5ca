import CLinux
import Glibc

/// The files and folders of one batch made durable by one syncfs(2) of their file system instead of
/// an fsync(2) each, where that is as strong and cheaper (issue 34, P2 with fsync on): on ext4, XFS
/// or btrfs syncfs writes back every dirty file and commits the journal (or flushes the disk's
/// cache) once for the batch, where each fsync of a batch made its own commit or flush. On ext4
/// without a journal one fsync follows it, so that a disk cache flush comes after the block device
/// writes syncfs ends with (its flush comes before them). Each target's own writeback errors are
/// then read through its descriptor (sync_file_range(2) waiting, which reports them as fsync does),
/// so that an error another batch's syncfs took first is not missed, and the syncfs goes through a
/// descriptor kept open per file system since its first batch, which sees every error since. Only from
/// Linux 5.17, the first whose syncfs reports a failed journal or log commit; elsewhere (NFS, FUSE
/// such as GlusterFS, whose syncfs does not reach the servers' disks, tmpfs, F2FS, older kernels),
/// and for a target alone on its file system, each keeps its own fsync.
enum FileSystemSync {
    /// statfs(2) `f_type` of ext2, ext3 and ext4 (EXT4_SUPER_MAGIC, linux/magic.h).
    private static let ext4: UInt64 = 0xEF53
    /// `f_type` of the file systems whose syncfs covers their files' fsyncs: ext4, XFS_SUPER_MAGIC,
    /// BTRFS_SUPER_MAGIC.
    private static let blockFileSystems: Set<UInt64> = [ext4, 0x5846_5342, 0x9123_683E]

    /// Whether this kernel's syncfs reports every error an fsync would (Linux 5.17, uname(2)):
    /// 5.8 made it report writeback errors, 5.17 the file system's own sync_fs errors.
    static let reportsErrors: Bool = isAtLeast(release: kernelRelease(), 5, 17)

    /// The running kernel's release (uname(2)), such as "6.1.0-18-amd64".
    private static func kernelRelease() -> String {
        var names = utsname()
        guard uname(&names) == 0 else { return "" }
        return withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Whether the kernel release `release` is `major.minor` or later.
    static func isAtLeast(release: String, _ major: Int, _ minor: Int) -> Bool {
        let numbers = release.split(separator: "-", maxSplits: 1).first.map {
            $0.split(separator: ".").prefix(2).map { Int($0) }
        } ?? []
        guard numbers.count == 2, let first = numbers[0], let second = numbers[1] else { return false }
        return (first, second) >= (major, minor)
    }

    /// Whether one syncfs of the file system of `descriptor` may stand for the fsyncs of its files
    /// (fstatfs(2)).
    static func isBatchable(_ descriptor: Int32) -> Bool {
        reportsErrors && fileSystemType(descriptor).map(blockFileSystems.contains) == true
    }

    /// The statfs(2) `f_type` of the file system of `descriptor` (fstatfs(2)).
    private static func fileSystemType(_ descriptor: Int32) -> UInt64? {
        var info = statfs()
        return fstatfs(descriptor, &info) == 0 ? UInt64(truncatingIfNeeded: info.f_type) : nil
    }

    /// A file (data and metadata) or a folder (its names) to make durable.
    enum Target {
        case file(FileDescriptor)
        case folder(DirectoryHandle)

        var descriptor: Int32 {
            switch self {
            case .file(let file): return file.rawValue
            case .folder(let folder): return folder.descriptor
            }
        }

        var path: String {
            switch self {
            case .file(let file): return file.path
            case .folder(let folder): return folder.path
            }
        }

        /// fsync(2).
        func syncAlone() throws(SystemError) {
            _ = try retryingEINTR("fsync", path) { fsync(descriptor) }
        }
    }

    /// What `sync` did: each target's error, in order, and the syncfs calls that stood for fsyncs.
    struct Outcome {
        var errors: [SystemError?]
        var fileSystemSyncs = 0
    }

    /// A batchable file system as a batch syncs it.
    private struct SyncPath {
        /// Opened anew (/proc/self/fd) from a target's descriptor at the file system's first batch
        /// and kept, so that its syncfs reports every error of the file system since then,
        /// including one another process's sync saw first.
        let descriptor: FileDescriptor
        /// Whether a cache flush must follow the syncfs: ext2 and ext4 without a journal flush in
        /// their sync_fs, before syncfs writes the block device's buffers (inodes, bitmaps, folders).
        let needsFlush: Bool
    }

    /// By device.
    private static let syncPaths = Locked<[UInt64: SyncPath]>([:])

    /// How the file system on `device`, which `target` is on, is synced: made at its first batch;
    /// nil where it is not batchable.
    private static func syncPath(device: UInt64, from target: Target) -> SyncPath? {
        syncPaths.withLock { known in
            if let path = known[device] { return path }
            guard reportsErrors, let type = fileSystemType(target.descriptor), blockFileSystems.contains(type),
                  let opened = try? FileDescriptor.open("/proc/self/fd/\(target.descriptor)",
                                                        flags: O_RDONLY | O_NONBLOCK | O_CLOEXEC) else { return nil }
            let path = SyncPath(descriptor: opened, needsFlush: type == ext4 && !hasJournal(device: device))
            known[device] = path
            return path
        }
    }

    /// Whether the ext4 file system on `device` keeps a journal: jbd2 lists it as
    /// /proc/fs/jbd2/<block device>-8 (the journal's inode). Not known (no /proc, no /sys): no.
    static func hasJournal(device: UInt64) -> Bool {
        // dev_t as glibc's gnu_dev_major and gnu_dev_minor split it.
        let major = ((device >> 8) & 0xFFF) | ((device >> 32) & ~UInt64(0xFFF))
        let minor = (device & 0xFF) | ((device >> 12) & ~UInt64(0xFF))
        var link = [CChar](repeating: 0, count: Int(PATH_MAX))
        let length = readlink("/sys/dev/block/\(major):\(minor)", &link, link.count - 1)
        guard length > 0 else { return false }
        let target = String(decoding: link[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let name = target.split(separator: "/").last else { return false }
        return access("/proc/fs/jbd2/\(name)-8", F_OK) == 0
    }

    /// The files of `files` made durable (`sync(_:)`).
    static func sync(_ files: [FileDescriptor]) -> Outcome {
        sync(files.map(Target.file))
    }

    /// Makes every target durable: for the targets that share a batchable file system with another,
    /// one syncfs (and on ext4 without a journal, an fsync of the first of them), then each one's
    /// own writeback errors; an fsync
    /// each for the others, and for all of a file system whose syncfs failed, so that each reports
    /// its own error.
    static func sync(_ targets: [Target]) -> Outcome {
        var outcome = Outcome(errors: [SystemError?](repeating: nil, count: targets.count))
        var alone: [Int] = []
        var byDevice: [UInt64: [Int]] = [:]
        if targets.count > 1, reportsErrors {
            for index in targets.indices {
                switch targets[index] {
                case .folder(let folder):
                    byDevice[folder.device, default: []].append(index)
                case .file(let file):
                    if let info = try? file.status() {
                        byDevice[UInt64(info.st_dev), default: []].append(index)
                    } else {
                        alone.append(index)
                    }
                }
            }
        } else {
            alone = Array(targets.indices)
        }
        for (device, indices) in byDevice {
            let first = targets[indices[0]]
            guard indices.count > 1, let path = syncPath(device: device, from: first),
                  (try? retryingEINTR("syncfs", path.descriptor.path, { dfl_syncfs(path.descriptor.rawValue) })) != nil else {
                alone += indices
                continue
            }
            outcome.fileSystemSyncs += 1
            // Without a journal, the first target's fsync: a cache flush after all syncfs wrote.
            var waits = indices[...]
            if path.needsFlush {
                do {
                    try first.syncAlone()
                } catch {
                    outcome.errors[indices[0]] = error
                }
                waits = indices.dropFirst()
            }
            for index in waits {
                let target = targets[index]
                do {
                    _ = try retryingEINTR("sync_file_range", target.path) { dfl_wait_writeback(target.descriptor) }
                } catch {
                    outcome.errors[index] = error
                }
            }
        }
        for index in alone {
            do {
                try targets[index].syncAlone()
            } catch {
                outcome.errors[index] = error
            }
        }
        return outcome
    }
}
