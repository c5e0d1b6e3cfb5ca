import CCrypto
import Glibc

/// A running message digest over OpenSSL's EVP interface (EVP_DigestInit_ex(3)).
final class Digest {
    private let context: OpaquePointer

    init(_ algorithm: Checksum.Algorithm) {
        context = EVP_MD_CTX_new()
        let method: OpaquePointer? = switch algorithm {
        case .sha256: EVP_sha256()
        case .sha512: EVP_sha512()
        case .md5: EVP_md5()
        }
        EVP_DigestInit_ex(context, method, nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        EVP_DigestUpdate(context, base, buffer.count)
    }

    /// The lower-case hex digest (EVP_DigestFinal_ex(3)); the digest cannot be updated afterwards.
    func finalize() -> String {
        var output = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        let hexDigits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(Int(length) * 2)
        for byte in output.prefix(Int(length)) {
            hex.append(hexDigits[Int(byte >> 4)])
            hex.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
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
