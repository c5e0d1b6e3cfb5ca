@testable import DropFetch
import Testing

/// The record key's seal is HMAC-SHA256 of RFC 2104, checked against RFC 4231's test vectors.
@Suite("Record key seal")
struct RecordKeyTests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test("RFC 4231 test cases 1, 2 and 6: a short key, a key shorter than the hash, a key longer than a block")
    func rfc4231Vectors() {
        let cases: [(key: [UInt8], data: String, mac: String)] = [
            (Array(repeating: 0x0b, count: 20), "Hi There",
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), "what do ya want for nothing?",
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            (Array(repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ]
        for (key, data, mac) in cases {
            #expect(hex(RecordKey(bytes: key).seal(Array(data.utf8))) == mac)
        }
    }

    @Test("a seal verifies whole or cut to 16 bytes, and not under another key or for another message")
    func verifies() {
        let key = RecordKey(bytes: Array(repeating: 9, count: 32))
        let message = Array("record".utf8)
        let seal = key.seal(message)
        #expect(key.verifies(seal, of: message))
        #expect(key.verifies(Array(seal.prefix(16)), of: message, truncatedTo: 16))
        #expect(!key.verifies(Array(seal.prefix(15)), of: message, truncatedTo: 15))
        #expect(!RecordKey(bytes: Array(repeating: 8, count: 32)).verifies(seal, of: message))
        #expect(!key.verifies(seal, of: Array("recorD".utf8)))
    }
}
