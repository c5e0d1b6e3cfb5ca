import Glibc

/// The digests of one download's data from byte 0: computed in the write callback for small
/// files, by a worker thread (FileDigester) for big ones and for a resumed prefix.
enum DownloadDigest {
    case inline(sha256: Digest, extra: Digest?)
    case background(FileDigester)

    /// Below this known size a worker thread costs more than it saves.
    static let backgroundThreshold: Int64 = 8 << 20

    /// A digest of `part` whose first `available` bytes are already valid.
    static func start(for part: PartFile, checksum: Checksum.Algorithm?, available: Int64,
                      total: Int64?) throws(SystemError) -> DownloadDigest {
        if available == 0, let total, total < backgroundThreshold {
            return .inline(sha256: Digest(.sha256), extra: checksum.flatMap { $0 == .sha256 ? nil : Digest($0) })
        }
        let reader = try part.folder.open(part.name, flags: O_RDONLY)
        return .background(try FileDigester(file: reader, checksum: checksum, available: available))
    }

    /// Takes the bytes just appended; the file now holds `size` valid bytes.
    func append(_ data: UnsafeRawBufferPointer, size: Int64) {
        switch self {
        case .inline(let sha256, let extra):
            sha256.update(data)
            extra?.update(data)
        case .background(let digester):
            digester.advance(to: size)
        }
    }

    /// The lower-case hex SHA-256 and, when the job's checksum uses another algorithm, that one.
    func finish(size: Int64) -> Result<(sha256: String, extra: String?), SystemError> {
        switch self {
        case .inline(let sha256, let extra): .success((sha256.finalize(), extra?.finalize()))
        case .background(let digester): digester.finish(size: size)
        }
    }
}
