import Glibc

/// Reads a job file safely through `UntrustedFile`: opened with O_NOFOLLOW | O_NONBLOCK and
/// checked with fstat(2) (regular file, one link, size within the limit) before a byte is read,
/// then read into one buffer sized from that fstat.
///
/// Any `limit` is safe, Int64.max included: reading stops one byte past it (or at the end of the file).
enum JobFileReader {
    /// A job file's bytes and its inode, which a claimed job's parts record as its claim (PartOwner).
    struct Contents {
        let bytes: [UInt8]
        let inode: UInt64
        /// Modification time (fstat(2)), nanoseconds since the epoch.
        var modified: Int64 = 0
        /// The bytes parsed, once: the queue hints, the claim and admission share it (`parse()`).
        private(set) var parsed: Result<JobSpec, JobFileError>?

        init(bytes: [UInt8], inode: UInt64, modified: Int64 = 0) {
            self.bytes = bytes
            self.inode = inode
            self.modified = modified
        }

        /// The job the bytes describe (JobFileParser), parsed at the first call only.
        mutating func parse() -> Result<JobSpec, JobFileError> {
            if let parsed { return parsed }
            let result = Result { () throws(JobFileError) in try JobFileParser.parse(bytes) }
            parsed = result
            return result
        }
    }

    /// Why a job file was not read.
    enum Failure: Error {
        /// The file is not a job file (`invalid_job`).
        case invalid(JobFileError)
        /// The agent is out of descriptors or memory (EMFILE, ENFILE): not the file's fault; read
        /// it again later.
        case transient(SystemError)

        var jobFileError: JobFileError {
            switch self {
            case .invalid(let error): return error
            case .transient(let error): return JobFileError(line: nil, message: "cannot read job file: \(error)")
            }
        }
    }

    static func read(_ path: String, limit: Int64) -> Result<[UInt8], JobFileError> {
        contents(of: path, limit: limit).map(\.bytes)
    }

    /// The file's bytes and inode, from one open, one fstat(2) and the reads to its end.
    static func contents(of path: String, limit: Int64) -> Result<Contents, JobFileError> {
        contents(of: path, in: AT_FDCWD, describing: path, limit: limit).mapError(\.jobFileError)
    }

    /// `contents` of `name` in `folder`, read through the folder's descriptor.
    static func contents(of name: String, in folder: DirectoryHandle, limit: Int64) -> Result<Contents, Failure> {
        contents(of: name, in: folder.descriptor, describing: FileSystem.join(folder.path, name), limit: limit)
    }

    private static func contents(of name: String, in folder: Int32, describing path: String,
                                 limit: Int64) -> Result<Contents, Failure> {
        let limit = Int(clamping: max(limit, 0))
        do {
            let file = try UntrustedFile.read(name, in: folder, describing: path, limit: limit, singleLink: true)
            return .success(Contents(bytes: file.bytes, inode: file.inode, modified: file.modified))
        } catch {
            if error.isTransient, case .system(let cause) = error { return .failure(.transient(cause)) }
            return .failure(.invalid(JobFileError(line: nil, message: message(for: error, limit: limit))))
        }
    }

    private static func message(for refusal: UntrustedFile.Refusal, limit: Int) -> String {
        switch refusal {
        case .missing: return "cannot open job file: no such file"
        case .symbolicLink: return "job file is a symbolic link"
        case .notRegular: return "job file is not a regular file"
        case .hardLinked(let links): return "job file has \(links) hard links"
        case .tooLarge(let size, _): return "job file is \(size) bytes, over max_job_file_size (\(limit))"
        case .system(let error): return error.operation == "open" ? "cannot open job file: \(error)" : "cannot read job file: \(error)"
        }
    }
}
