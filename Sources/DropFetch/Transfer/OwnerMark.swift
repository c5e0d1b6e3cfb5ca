import Glibc

/// A `.part`'s owner sealed on the file itself, as the extended attribute `user.dropfetch.owner`
/// (docs/spool.md, invariant 6). A new part carries it instead of a resume record until a record is
/// needed (its first checkpoint, a hold, a failure): a small job then creates one file, not two.
/// rename(2) keeps it, so the published file carries it too, and it proves the file is its job's
/// between publishing and filing, whether or not a record was ever written.
///
/// The value is binary and short, so that ext4 keeps it inside the inode (no block of its own for
/// names up to about 30 bytes): a version byte, the owner's claim (8 bytes, little-endian), the
/// first 16 bytes of the seal, and the owner job's name. The seal is the HMAC-SHA256 (RecordKey,
/// the key of the resume records) of a context string, the version, the claim, the file's inode
/// and the name: the inode is sealed but not stored, so a mark copied onto another file, like one
/// written without the key, proves nothing.
enum OwnerMark {
    static let attribute = "user.dropfetch.owner"
    static let version: UInt8 = 1
    static let sealLength = 16
    private static let headerLength = 1 + 8 + sealLength
    /// The longest value read: a job's name is a file name, 255 bytes at most.
    static let maxLength = headerLength + 255

    /// The mark of `owner` for the file with inode `part`; the sealed message and the seal are
    /// made on the stack (a mark is made for every new `.part`).
    static func value(for owner: PartOwner, part: UInt64, key: RecordKey) -> [UInt8] {
        var job = owner.job
        return job.withUTF8 { job in
            let messageCount = messageLength(job: job.count)
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: messageCount + 32) { scratch in
                let message = UnsafeMutableBufferPointer(rebasing: scratch[0..<messageCount])
                let seal = UnsafeMutableBufferPointer(rebasing: scratch[messageCount...])
                writeMessage(job: job, claim: owner.claim, part: part, into: message)
                key.seal(UnsafeBufferPointer(message), into: seal)
                return [UInt8](unsafeUninitializedCapacity: headerLength + job.count) { value, count in
                    value[0] = version
                    count = 1
                    put(littleEndian: owner.claim, into: value, at: &count)
                    put(UnsafeBufferPointer(rebasing: seal[0..<sealLength]), into: value, at: &count)
                    put(job, into: value, at: &count)
                }
            }
        }
    }

    /// The owner `value` names if its seal verifies for the file with inode `part` under `key`
    /// (nil reads it unchecked, as ResumeRecordFile.unseal does); nil for anything else.
    static func owner(in value: [UInt8], part: UInt64, key: RecordKey?) -> PartOwner? {
        guard value.count > headerLength, value.count <= maxLength, value[0] == version else { return nil }
        let claim = value[1..<9].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let job = Array(value[headerLength...])
        guard let name = String(validating: job, as: UTF8.self) else { return nil }
        if let key, !key.verifies(Array(value[9..<headerLength]), of: message(job: job, claim: claim, part: part),
                                  truncatedTo: sealLength) {
            return nil
        }
        return PartOwner(job: name, claim: claim)
    }

    /// The owner marked on `file` (inode `part`), if its mark verifies; nil when it has none, the
    /// file system keeps no user attributes, or the mark is not one of this spool's.
    static func read(from file: FileDescriptor, part: UInt64, key: RecordKey?) -> PartOwner? {
        guard let value = try? file.attribute(attribute, limit: maxLength) else { return nil }
        return owner(in: value, part: part, key: key)
    }

    /// Errors of fsetxattr(2) that say the file system (or this file) takes no user attribute:
    /// ENOTSUP (NFS without RFC 8276 support, some FUSE file systems), EPERM, EACCES; E2BIG and
    /// ERANGE for a value longer than it keeps. The owner then goes into a record at once.
    static func isRefusal(_ error: SystemError) -> Bool {
        [ENOTSUP, EOPNOTSUPP, EPERM, EACCES, E2BIG, ERANGE].contains(error.code)
    }

    /// Refusals that hold for every file of the folder (not only for a long value).
    static func refusesFolder(_ error: SystemError) -> Bool {
        [ENOTSUP, EOPNOTSUPP, EPERM, EACCES].contains(error.code)
    }

    /// What the seal covers, as an array (to verify a mark read back).
    private static func message(job: [UInt8], claim: UInt64, part: UInt64) -> [UInt8] {
        let count = messageLength(job: job.count)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, written in
            writeMessage(job: job, claim: claim, part: part, into: buffer)
            written = count
        }
    }

    private static func messageLength(job: Int) -> Int { messagePrefix.count + 16 + job }

    /// What the seal covers: a context string and the version, the claim and the file's inode
    /// (little-endian), the owner job's name; written into `buffer` of `messageLength` bytes.
    private static func writeMessage<Job: Collection<UInt8>>(job: Job, claim: UInt64, part: UInt64,
                                                             into buffer: UnsafeMutableBufferPointer<UInt8>) {
        var at = 0
        put(messagePrefix, into: buffer, at: &at)
        put(littleEndian: claim, into: buffer, at: &at)
        put(littleEndian: part, into: buffer, at: &at)
        put(job, into: buffer, at: &at)
    }

    private static let messagePrefix: [UInt8] = Array("dropfetch owner mark".utf8) + [0, version]

    private static func put<Bytes: Collection<UInt8>>(_ bytes: Bytes, into buffer: UnsafeMutableBufferPointer<UInt8>,
                                                      at index: inout Int) {
        for byte in bytes {
            buffer[index] = byte
            index += 1
        }
    }

    private static func put(littleEndian value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at index: inout Int) {
        for shift in stride(from: 0, to: 64, by: 8) {
            buffer[index] = UInt8(truncatingIfNeeded: value >> UInt64(shift))
            index += 1
        }
    }
}
