@testable import DropFetch
import Testing

@Suite("What a download is hashed with")
struct DownloadDigestTests {
    @Test("SHA-256 unless digest: none, plus the checksum= algorithm; nothing at all for none without a checksum")
    func algorithmsFollowTheChoiceAndTheChecksum() {
        #expect(DownloadDigest.algorithms(.sha256, checksum: nil) == [.sha256])
        #expect(DownloadDigest.algorithms(.sha256, checksum: .sha256) == [.sha256])
        #expect(DownloadDigest.algorithms(.sha256, checksum: .md5) == [.sha256, .md5])
        #expect(DownloadDigest.algorithms(.none, checksum: nil).isEmpty)
        #expect(DownloadDigest.algorithms(.none, checksum: .sha256) == [.sha256])
        #expect(DownloadDigest.algorithms(.none, checksum: .sha512) == [.sha512])
    }
}
