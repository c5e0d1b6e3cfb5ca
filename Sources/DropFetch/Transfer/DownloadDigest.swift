import Glibc

/// The digests of one download's data from byte 0: computed in the write callback for small
/// files, by a worker thread (FileDigester) for big ones and for a resumed prefix.
enum DownloadDigest {
    case inline([(algorithm: Checksum.Algorithm, digest: Digest)])
    case background(FileDigester)

    /// Below this known size a worker thread costs more than it saves.
    static let backgroundThreshold: Int64 = 8 << 20

    /// What a download's data is hashed with: SHA-256 for the status file unless `digest: none`,
    /// and the algorithm of the job's `checksum=`; empty when nothing needs a digest.
    static func algorithms(_ choice: Config.DigestChoice, checksum: Checksum.Algorithm?) -> [Checksum.Algorithm] {
        var algorithms: [Checksum.Algorithm] = choice == .sha256 ? [.sha256] : []
        if let checksum, !algorithms.contains(checksum) { algorithms.append(checksum) }
        return algorithms
    }

    /// A digest with `algorithms` of `part` whose first `available` bytes are already valid; nil,
    /// with no file opened and no thread started, when `algorithms` is empty.
    static func start(for part: PartFile, algorithms: [Checksum.Algorithm], available: Int64,
                      total: Int64?) throws(SystemError) -> DownloadDigest? {
        guard !algorithms.isEmpty else { return nil }
        if available == 0, let total, total < backgroundThreshold {
            return .inline(algorithms.map { ($0, Digest($0)) })
        }
        // O_NONBLOCK: a FIFO renamed over the .part by a destination writer must not hang the loop.
        let reader = try part.folder.open(part.name, flags: O_RDONLY | O_NONBLOCK)
        return .background(try FileDigester(file: reader, algorithms: algorithms, available: available))
    }

    /// Takes the bytes just appended; the file now holds `size` valid bytes.
    func append(_ data: UnsafeRawBufferPointer, size: Int64) {
        switch self {
        case .inline(let digests):
            for entry in digests { entry.digest.update(data) }
        case .background(let digester):
            digester.advance(to: size)
        }
    }

    /// Marks the end of the data at `size` bytes: a descriptor to poll when a worker still hashes
    /// (FileDigester.end), nil when `finish` will not wait.
    func end(size: Int64) -> Int32? {
        if case .background(let digester) = self { return digester.end(size: size) }
        return nil
    }

    /// The lower-case hex digest of each algorithm.
    func finish(size: Int64) -> Result<[Checksum.Algorithm: String], SystemError> {
        switch self {
        case .inline(let digests): .success(DownloadDigest.finalize(digests))
        case .background(let digester): digester.finish(size: size)
        }
    }

    /// Ends each digest and keys its hex value by algorithm.
    static func finalize(_ digests: [(algorithm: Checksum.Algorithm, digest: Digest)]) -> [Checksum.Algorithm: String] {
        var values: [Checksum.Algorithm: String] = [:]
        for entry in digests { values[entry.algorithm] = entry.digest.finalize() }
        return values
    }
}
