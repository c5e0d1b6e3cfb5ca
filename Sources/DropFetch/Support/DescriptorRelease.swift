/// A descriptor closed on a worker. The last close of a file that is no longer named frees its
/// blocks (ext4_evict_inode), which on a file system mounted with `discard` waits for the disk
/// (blkdev_issue_discard); holding the old file open across a replacing rename moves that wait
/// from the loop to here.
final class DescriptorRelease: WorkerTask {
    private var descriptor: FileDescriptor?

    init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Drops the only reference, so that close(2) runs on this thread.
    func perform() -> SystemError? {
        descriptor = nil
        return nil
    }
}
