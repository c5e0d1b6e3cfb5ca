import Foundation

/// SHA-256 (FIPS 180-4) in pure Swift, so tests can check downloaded files without a C library.
///
///     var hasher = SHA256()
///     hasher.update(firstPart)
///     hasher.update(secondPart)
///     let hex = hasher.finalizeHex()
struct SHA256: Sendable {
    private var hash: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    /// Bytes waiting for a full 64-byte block.
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    /// The digest of `bytes`.
    static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of `bytes` in lowercase hex.
    static func hex(_ bytes: [UInt8]) -> String {
        hash(bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The digest of the file at `path` in lowercase hex, read 1 MiB at a time.
    static func hex(fileAt path: String) throws -> String {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var hasher = SHA256()
        while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
            hasher.update([UInt8](data))
        }
        return hasher.finalizeHex()
    }

    init() {}

    mutating func update(_ bytes: [UInt8]) {
        length &+= UInt64(bytes.count)
        bytes.withUnsafeBytes { input in
            var offset = 0
            if !pending.isEmpty {
                let taken = min(64 - pending.count, input.count)
                pending.append(contentsOf: input[0..<taken])
                offset = taken
                guard pending.count == 64 else { return }
                let block = pending
                block.withUnsafeBytes { compress($0) }
                pending.removeAll(keepingCapacity: true)
            }
            while input.count - offset >= 64 {
                compress(UnsafeRawBufferPointer(rebasing: input[offset..<offset + 64]))
                offset += 64
            }
            pending.append(contentsOf: input[offset...])
        }
    }

    /// Pads the message (FIPS 180-4 §5.1.1) and returns the 32-byte digest.
    mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        tail.withUnsafeBytes { blocks in
            for start in stride(from: 0, to: blocks.count, by: 64) {
                compress(UnsafeRawBufferPointer(rebasing: blocks[start..<start + 64]))
            }
        }
        pending.removeAll()
        return hash.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * $0)) } }
    }

    mutating func finalizeHex() -> String {
        finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The compression function of FIPS 180-4 §6.2.2 on one 64-byte block.
    ///
    /// Written over raw buffers with no calls in the rounds: the test target is built without
    /// optimisation, where array indexing and small functions cost several times more.
    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for t in 0..<16 {
                w[t] = UInt32(block[4 * t]) << 24 | UInt32(block[4 * t + 1]) << 16
                    | UInt32(block[4 * t + 2]) << 8 | UInt32(block[4 * t + 3])
            }
            for t in 16..<64 {
                let x = w[t - 15], y = w[t - 2]
                let s0 = (x >> 7 | x << 25) ^ (x >> 18 | x << 14) ^ (x >> 3)
                let s1 = (y >> 17 | y << 15) ^ (y >> 19 | y << 13) ^ (y >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }
            hash.withUnsafeMutableBufferPointer { hash in
                var (a, b, c, d, e, f, g, h) = (hash[0], hash[1], hash[2], hash[3], hash[4], hash[5], hash[6], hash[7])
                Self.k.withUnsafeBufferPointer { k in
                    for t in 0..<64 {
                        let s1 = (e >> 6 | e << 26) ^ (e >> 11 | e << 21) ^ (e >> 25 | e << 7)
                        let t1 = h &+ s1 &+ ((e & f) ^ (~e & g)) &+ k[t] &+ w[t]
                        let s0 = (a >> 2 | a << 30) ^ (a >> 13 | a << 19) ^ (a >> 22 | a << 10)
                        let t2 = s0 &+ ((a & b) ^ (a & c) ^ (b & c))
                        h = g; g = f; f = e; e = d &+ t1
                        d = c; c = b; b = a; a = t1 &+ t2
                    }
                }
                hash[0] &+= a; hash[1] &+= b; hash[2] &+= c; hash[3] &+= d
                hash[4] &+= e; hash[5] &+= f; hash[6] &+= g; hash[7] &+= h
            }
        }
    }

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}
