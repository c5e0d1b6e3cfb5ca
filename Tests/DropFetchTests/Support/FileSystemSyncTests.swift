import Foundation
import Glibc
import Testing
@testable import DropFetch

/// A batch's files made durable by one syncfs(2) where the file system allows it (`FileSystemSync`):
/// which file systems do, and that each target still answers for itself.
@Suite("File system sync")
struct FileSystemSyncTests {
    private func makeFolder() throws -> String {
        let path = NSTemporaryDirectory() + "dropfetch-fssync-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    private func write(_ name: String, _ text: String, in folder: String) throws -> FileDescriptor {
        let file = try FileDescriptor.open(folder + "/" + name, flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o644)
        try file.write(Array(text.utf8))
        return file
    }

    /// The type /proc/self/mountinfo gives the mount that holds `path` (the longest mount point
    /// that is a prefix of it), read independently of statfs(2).
    private func mountType(of path: String) throws -> String {
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var best: (point: String, type: String) = ("", "")
        for line in try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count, fields.count > 4 else { continue }
            let point = String(fields[4])
            let within = point == "/" || real == point || real.hasPrefix(point + "/")
            if within, point.count >= best.point.count { best = (point, String(fields[dash + 1])) }
        }
        return best.type
    }

    @Test("one syncfs stands for the fsyncs only on local block file systems (ext4, XFS, btrfs), never on tmpfs or /proc")
    func batchableFileSystems() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let handle = try DirectoryHandle.openRoot(folder, create: false)
        let type = try mountType(of: folder)
        let local = ["ext2", "ext3", "ext4", "xfs", "btrfs"].contains(type)
        #expect(FileSystemSync.isBatchable(handle.descriptor) == (local && FileSystemSync.reportsErrors), "\(folder) is on \(type)")
        if FileManager.default.fileExists(atPath: "/dev/shm"), try mountType(of: "/dev/shm") == "tmpfs" {
            let shm = try DirectoryHandle.openRoot("/dev/shm", create: false)
            #expect(!FileSystemSync.isBatchable(shm.descriptor))
        }
        let proc = try DirectoryHandle.openRoot("/proc", create: false)
        #expect(!FileSystemSync.isBatchable(proc.descriptor))
    }

    @Test("the kernel releases whose syncfs reports every error: 5.17 and later")
    func kernelReleases() {
        for (release, expected) in [("5.17.0", true), ("6.1.0-18-amd64", true), ("10.0", true), ("5.16.20", false),
                                    ("5.8.0", false), ("4.19.0-26-amd64", false), ("6", false), ("", false), ("x.y", false)] {
            #expect(FileSystemSync.isAtLeast(release: release, 5, 17) == expected, "\(release)")
        }
    }

    @Test("files and their folder synced together all succeed with one syncfs where the file system allows it, and keep what was written")
    func filesAndFolderTogether() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let handle = try DirectoryHandle.openRoot(folder, create: false)
        let files = try (0..<5).map { try write("f\($0)", "bytes of \($0)\n", in: folder) }
        let outcome = FileSystemSync.sync(files.map { .file($0) } + [.folder(handle)])
        #expect(outcome.fileSystemSyncs == (FileSystemSync.isBatchable(handle.descriptor) ? 1 : 0))
        let errors = outcome.errors
        #expect(errors.count == 6)
        #expect(errors.allSatisfy { $0 == nil }, "\(errors)")
        for index in 0..<5 {
            #expect(try String(contentsOfFile: folder + "/f\(index)", encoding: .utf8) == "bytes of \(index)\n")
        }
    }

    @Test("a target that cannot be synced reports its own error, first or last in its batch; the others none")
    func eachTargetAnswersForItself() throws {
        let folder = try makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let good = try (0..<3).map { try write("g\($0)", "good \($0)\n", in: folder) }
        // An O_PATH descriptor: fstat(2) works, so it joins the batch, but fsync(2) and syncfs(2) refuse it (EBADF).
        let pathOnly = try FileDescriptor.open(folder + "/g0", flags: 0o10000000 /* O_PATH, only under _GNU_SOURCE */)
        for batch in [[pathOnly] + good, good + [pathOnly]] {
            let errors = FileSystemSync.sync(batch).errors
            let bad = batch.firstIndex { $0 === pathOnly }!
            #expect(errors[bad]?.code == EBADF, "\(errors)")
            #expect(errors.indices.filter { $0 != bad }.allSatisfy { errors[$0] == nil }, "\(errors)")
        }
    }
}
