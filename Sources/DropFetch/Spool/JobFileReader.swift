import Glibc

/// Reads a claimed job file safely: opened with O_NOFOLLOW | O_NONBLOCK and checked with fstat(2)
/// (regular file, one link, size within the limit) before a byte is read, then read into one
/// buffer sized from that fstat.
///
/// Any `limit` is safe, Int64.max included: reading stops one byte past it (or at the end of the file).
enum JobFileReader {
    /// A job file's bytes and its inode, which a claimed job's parts record as its claim (PartOwner).
    struct Contents {
        var bytes: [UInt8]
        var inode: UInt64
    }

    static func read(_ path: String, limit: Int64) -> Result<[UInt8], JobFileError> {
        contents(of: path, limit: limit).map(\.bytes)
    }

    /// The file's bytes and inode, from one open, one fstat(2) and the reads to its end.
    static func contents(of path: String, limit: Int64) -> Result<Contents, JobFileError> {
        let limit = max(limit, 0)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        } catch where error.code == ELOOP {
            return .failure(JobFileError(line: nil, message: "job file is a symbolic link"))
        } catch {
            return .failure(JobFileError(line: nil, message: "cannot open job file: \(error)"))
        }
        do {
            let info = try file.status()
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                return .failure(JobFileError(line: nil, message: "job file is not a regular file"))
            }
            guard info.st_nlink == 1 else {
                return .failure(JobFileError(line: nil, message: "job file has \(info.st_nlink) hard links"))
            }
            guard Int64(info.st_size) <= limit else {
                return .failure(JobFileError(line: nil, message: "job file is \(info.st_size) bytes, over max_job_file_size (\(limit))"))
            }
            // One byte more than the limit shows a file that grew after fstat(2); saturates at Int.max.
            let (readLimit, overflow) = Int(clamping: limit).addingReportingOverflow(1)
            let bytes = try file.read(upTo: overflow ? Int.max : readLimit, expected: Int(info.st_size))
            guard bytes.count <= limit else {
                return .failure(JobFileError(line: nil, message: "job file is over max_job_file_size (\(limit))"))
            }
            return .success(Contents(bytes: bytes, inode: UInt64(info.st_ino)))
        } catch {
            return .failure(JobFileError(line: nil, message: "cannot read job file: \(error)"))
        }
    }
}
