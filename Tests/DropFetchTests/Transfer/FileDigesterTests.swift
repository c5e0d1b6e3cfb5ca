@testable import DropFetch
import Foundation
import Testing

@Suite("Background hashing of a growing file")
struct FileDigesterTests {
    @Test("hashes a file written in pieces while it grows, for SHA-256 and a second algorithm")
    func hashesWhileGrowing() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("digest-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let data = TestHTTPServer.randomBytes(3_000_001, seed: 70)
        let prefix = 1_000_000
        _ = FileManager.default.createFile(atPath: path, contents: Data(data[..<prefix]))
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()

        let digester = try FileDigester(file: FileDescriptor.open(path, flags: O_RDONLY), algorithms: [.sha256, .md5],
                                         available: Int64(prefix))
        var offset = prefix
        while offset < data.count {
            let end = min(data.count, offset + 65_537)
            handle.write(Data(data[offset..<end]))
            offset = end
            digester.advance(to: Int64(offset))
        }
        try handle.close()
        let result = try digester.finish(size: Int64(data.count)).get()
        #expect(result[.sha256] == TestHTTPServer.sha256Hex(data))
        let md5 = Digest(.md5)
        data.withUnsafeBytes { md5.update($0) }
        #expect(result[.md5] == md5.finalize())
    }

    @Test("a sleeping worker is woken once per few megabytes of new data, not for every write")
    func wokenPerStepNotPerWrite() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("digest-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let data = TestHTTPServer.randomBytes(12 << 20, seed: 72)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(data)))
        let digester = try FileDigester(file: FileDescriptor.open(path, flags: O_RDONLY), algorithms: [.sha256], available: 0)
        let write = 64 << 10
        for size in stride(from: write, through: data.count, by: write) {
            // Each write finds the worker asleep, as it is when it keeps up with the transfer.
            let deadline = Date().addingTimeInterval(10)
            while !digester.isSleeping, Date() < deadline { usleep(100) }
            digester.advance(to: Int64(size))
        }
        #expect(digester.wakeups <= data.count / Int(FileDigester.wakeStep), "\(digester.wakeups) wake-ups for \(data.count / write) writes")
        #expect(try digester.finish(size: Int64(data.count)).get()[.sha256] == TestHTTPServer.sha256Hex(data))
    }

    @Test("a digester given up mid-way stops without hashing the rest")
    func cancelledDigesterEnds() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("digest-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = FileManager.default.createFile(atPath: path, contents: Data(TestHTTPServer.randomBytes(100_000, seed: 71)))
        var digester: FileDigester? = try FileDigester(file: FileDescriptor.open(path, flags: O_RDONLY), algorithms: [.sha256], available: 50_000)
        #expect(digester != nil)
        digester = nil
        // A file shorter than promised is an error, not a hang.
        let short = try FileDigester(file: FileDescriptor.open(path, flags: O_RDONLY), algorithms: [.sha256], available: 0)
        #expect(throws: SystemError.self) { try short.finish(size: 200_000).get() }
    }
}
