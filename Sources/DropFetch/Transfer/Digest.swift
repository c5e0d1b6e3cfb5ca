import CCrypto
import Glibc

/// A running message digest over OpenSSL's EVP interface (EVP_DigestInit_ex(3)).
final class Digest {
    private let context: OpaquePointer

    // Each algorithm fetched once (EVP_MD_fetch(3)): EVP_sha256() and its kin make
    // EVP_DigestInit_ex fetch the implementation anew on every digest. Immutable and shared by
    // every thread, as OpenSSL allows; the legacy method stands in if a fetch fails.
    nonisolated(unsafe) private static let sha256 = EVP_MD_fetch(nil, "SHA2-256", nil) ?? EVP_sha256()
    nonisolated(unsafe) private static let sha512 = EVP_MD_fetch(nil, "SHA2-512", nil) ?? EVP_sha512()
    nonisolated(unsafe) private static let md5 = EVP_MD_fetch(nil, "MD5", nil) ?? EVP_md5()

    init(_ algorithm: Checksum.Algorithm) {
        context = EVP_MD_CTX_new()
        let method: OpaquePointer? = switch algorithm {
        case .sha256: Digest.sha256
        case .sha512: Digest.sha512
        case .md5: Digest.md5
        }
        EVP_DigestInit_ex2(context, method, nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        EVP_DigestUpdate(context, base, buffer.count)
    }

    /// The lower-case hex digest (EVP_DigestFinal_ex(3)), or its first `limit` bytes; the digest
    /// cannot be updated afterwards.
    func finalize(bytes limit: Int = Digest.maxSize) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Digest.maxSize) { output in
            var length: UInt32 = 0
            EVP_DigestFinal_ex(context, output.baseAddress, &length)
            return Digest.hex(UnsafeBufferPointer(output), count: min(Int(length), limit))
        }
    }

    /// The lower-case hex SHA-256 of `buffer` in one call (`dfl_sha256`: no EVP context made), or its
    /// first `limit` bytes: the done index keys a URL so for every job filed into done/.
    static func sha256Hex(_ buffer: UnsafeRawBufferPointer, bytes limit: Int = 32) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { output in
            dfl_sha256(buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), buffer.count, output.baseAddress)
            return hex(UnsafeBufferPointer(output), count: min(32, limit))
        }
    }

    /// The first `count` bytes of `digest` as lower-case hex.
    private static func hex(_ digest: UnsafeBufferPointer<UInt8>, count: Int) -> String {
        String(unsafeUninitializedCapacity: count * 2) { hex in
            for index in 0..<count {
                hex[2 * index] = Digest.hexDigit(digest[index] >> 4)
                hex[2 * index + 1] = Digest.hexDigit(digest[index] & 0x0F)
            }
            return count * 2
        }
    }

    /// EVP_MAX_MD_SIZE: the longest digest (SHA-512).
    static let maxSize = 64

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// Feeds the first `length` bytes of an open file, used to rebuild the state when resuming.
    func update(from file: FileDescriptor, length: Int64) throws(SystemError) {
        try file.seek(to: 0)
        var remaining = length
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while remaining > 0 {
            let want = Int(min(Int64(chunk.count), remaining))
            let outcome: Result<Int, SystemError> = chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemError) in
                    let got = try retryingEINTR("read", file.path) { read(file.rawValue, buffer.baseAddress, want) }
                    update(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                    return got
                }
            }
            let got = try outcome.get()
            if got == 0 { throw SystemError(code: EIO, operation: "read (file shorter than expected)", path: file.path) }
            remaining -= Int64(got)
        }
    }
}
