import CLinux
import Glibc

/// The files of one batch made durable by one syncfs(2) of their file system instead of an fsync(2)
/// each, where that is as strong and cheaper (issue 34, P2 with fsync on): on a local block file
/// system (ext4, XFS, btrfs, F2FS) syncfs writes back every dirty file and commits the journal, or
/// flushes the disk's cache, once for the batch, where each fsync of a batch made its own commit or
/// flush. Each file's own writeback errors are then read through its descriptor (sync_file_range(2)
/// waiting, which reports them as fsync would), so that an error another batch's syncfs took first
/// is not missed. Only from Linux 5.8, whose syncfs reports errors at all; elsewhere (NFS, FUSE
/// such as GlusterFS, whose syncfs does not reach the servers' disks, tmpfs, older kernels), and
/// for a file or folder alone on its file system, each keeps its own fsync.
enum FileSystemSync {
    /// statfs(2) `f_type` of the file systems whose syncfs covers their files' fsyncs (linux/magic.h).
    private static let blockFileSystems: Set<UInt64> = [
        0xEF53,        // EXT4_SUPER_MAGIC (ext2, ext3, ext4)
        0x5846_5342,   // XFS_SUPER_MAGIC
        0x9123_683E,   // BTRFS_SUPER_MAGIC
        0xF2F5_2010,   // F2FS_SUPER_MAGIC
    ]

    /// Whether this kernel's syncfs reports writeback errors (Linux 5.8, uname(2)).
    static let reportsErrors: Bool = {
        var names = utsname()
        guard uname(&names) == 0 else { return false }
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard numbers.count == 2 else { return false }
        return (numbers[0], numbers[1]) >= (5, 8)
    }()

    /// Whether one syncfs of the file system of `descriptor` may stand for the fsyncs of its files
    /// (fstatfs(2)).
    static func isBatchable(_ descriptor: Int32) -> Bool {
        guard reportsErrors else { return false }
        var info = statfs()
        return fstatfs(descriptor, &info) == 0 && blockFileSystems.contains(UInt64(truncatingIfNeeded: info.f_type))
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

        /// fsync(2), where no syncfs stands for it.
        func syncAlone() throws(SystemError) {
            _ = try retryingEINTR("fsync", path) { fsync(descriptor) }
        }
    }

    /// The files of `files` made durable (`sync(_:)`).
    static func sync(_ files: [FileDescriptor]) -> [SystemError?] {
        sync(files.map(Target.file))
    }

    /// Makes every target durable: one syncfs for the targets that share a batchable file system
    /// with another, then each file's own writeback errors (a folder's are the syncfs's); an fsync
    /// each for the others, and for all of a file system whose syncfs failed, so that each reports
    /// its own error. Returns each target's error, in order.
    static func sync(_ targets: [Target]) -> [SystemError?] {
        var errors = [SystemError?](repeating: nil, count: targets.count)
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
        for indices in byDevice.values {
            let first = targets[indices[0]]
            guard indices.count > 1, isBatchable(first.descriptor),
                  (try? retryingEINTR("syncfs", first.path, { dfl_syncfs(first.descriptor) })) != nil else {
                alone += indices
                continue
            }
            for index in indices {
                guard case .file(let file) = targets[index] else { continue }
                do {
                    _ = try retryingEINTR("syncfs", file.path) { dfl_wait_writeback(file.rawValue) }
                } catch {
                    errors[index] = error
                }
            }
        }
        for index in alone {
            do {
                try targets[index].syncAlone()
            } catch {
                errors[index] = error
            }
        }
        return errors
    }
}
