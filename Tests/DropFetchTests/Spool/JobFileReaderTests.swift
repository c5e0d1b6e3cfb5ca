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
}
