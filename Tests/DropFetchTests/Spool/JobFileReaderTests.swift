import Foundation
import Testing
@testable import DropFetch

/// `JobFileReader` with any `limits.max_job_file_size`, the largest included: no overflow, no trap.
@Suite("Job file reader limits")
struct JobFileReaderTests {
    private func jobFile(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "dropfetch-reader-\(UUID().uuidString).url"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    @Test("a limit of Int64.max or 2^62 reads the whole file", arguments: [Int64.max, 1 << 62, Int64.max - 1])
    func hugeLimits(limit: Int64) throws {
        let path = try jobFile("https://a.example/f\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let bytes = try JobFileReader.read(path, limit: limit).get()
        #expect(bytes == Array("https://a.example/f\n".utf8))
    }

    @Test("a file one byte over the limit is refused; exactly at the limit is read")
    func limitBoundary() throws {
        let text = "https://a.example/f\n"
        let path = try jobFile(text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try JobFileReader.read(path, limit: Int64(text.utf8.count)).get().count == text.utf8.count)
        let error = try #require(throws: JobFileError.self) {
            try JobFileReader.read(path, limit: Int64(text.utf8.count - 1)).get()
        }
        #expect(error.message.contains("over max_job_file_size"))
    }

    @Test("zero and negative limits refuse any content without trapping", arguments: [0, -1, Int64.min])
    func smallLimits(limit: Int64) throws {
        let path = try jobFile("x")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: JobFileError.self) { try JobFileReader.read(path, limit: limit).get() }
    }

    @Test("the buffer sized from fstat is right whatever the size said: a file that grew is read whole, up to the limit",
          arguments: [0, 1, 99, 100, 101, 5_000, 1 << 20])
    func readsWhateverTheExpectedSize(expected: Int) throws {
        let text = String(repeating: "0123456789", count: 10_000)  // 100,000 bytes
        let path = try jobFile(text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let whole = try FileDescriptor.open(path, flags: O_RDONLY).read(upTo: 200_000, expected: expected)
        #expect(whole == Array(text.utf8))
        let capped = try FileDescriptor.open(path, flags: O_RDONLY).read(upTo: 70_001, expected: expected)
        #expect(capped == Array(text.utf8.prefix(70_001)))
        #expect(try FileDescriptor.open(path, flags: O_RDONLY).read(upTo: 0, expected: expected).isEmpty)
    }

    @Test("an empty job file reads as empty; the contents carry the file's inode")
    func contentsAndInode() throws {
        let path = try jobFile("")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try JobFileReader.read(path, limit: 100).get().isEmpty)
        try "https://a.example/f\n".write(toFile: path, atomically: false, encoding: .utf8)
        let contents = try JobFileReader.contents(of: path, limit: 100).get()
        #expect(contents.bytes == Array("https://a.example/f\n".utf8))
        let inode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? UInt64)
        #expect(contents.inode == inode)
    }
}
