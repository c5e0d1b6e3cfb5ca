import Foundation

/// One run of the `curl` command-line tool, as an independent client for testing `TestHTTPServer`.
struct CurlRun: Sendable {
    /// curl's exit status: 0, 7 (couldn't connect), 18 (partial file), 28 (timeout), 47 (too many redirects)…
    let exitCode: Int32
    /// `%{http_code}` of the last transfer, 0 when no response came.
    var httpCode: Int { httpCodes.last ?? 0 }
    /// `%{http_code}` of each transfer, one per URL given.
    let httpCodes: [Int]
    /// The body as written by `-o`.
    let body: [UInt8]
    /// The raw header blocks as written by `-D` (one per response when following redirects).
    let headerText: String

    /// Size and SHA-256 of the body: compared instead of the bytes, so a failure prints a line, not the file.
    var bodyFingerprint: String { Self.fingerprint(body) }

    static func fingerprint(_ bytes: some Sequence<UInt8>) -> String {
        let array = Array(bytes)
        return "\(array.count) bytes, sha256 \(SHA256.hex(array))"
    }

    /// A header of the last response block, name compared case-insensitively.
    func header(_ name: String) -> String? {
        let blocks = headerText.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
        guard let last = blocks.last else { return nil }
        for line in last.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// Runs `curl -s -o BODY -D HEADERS -w '%{stderr}%{http_code}\n' arguments…` and waits for it.
    ///
    /// Only the first URL's body is kept; those of further URLs go to /dev/null.
    static func run(_ arguments: [String]) throws -> CurlRun {
        try start(arguments).finish()
    }

    /// Starts curl without waiting, for runs that overlap.
    static func start(_ arguments: [String]) throws -> Running {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("curlrun-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-o", folder.appendingPathComponent("body").path,
                             "-D", folder.appendingPathComponent("headers").path,
                             "-w", "%{stderr}%{http_code}\n"] + arguments
        let output = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return Running(process: process, output: output, folder: folder)
    }

    /// A curl process that has been started; `finish()` waits for it and collects its results.
    final class Running {
        let process: Process
        private let output: Pipe
        private let folder: URL

        init(process: Process, output: Pipe, folder: URL) {
            self.process = process
            self.output = output
            self.folder = folder
        }

        func finish() throws -> CurlRun {
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            defer { try? FileManager.default.removeItem(at: folder) }
            let body = (try? Data(contentsOf: folder.appendingPathComponent("body"))) ?? Data()
            let headers = (try? Data(contentsOf: folder.appendingPathComponent("headers"))) ?? Data()
            return CurlRun(
                exitCode: process.terminationStatus,
                httpCodes: String(decoding: printed, as: UTF8.self).split(separator: "\n").compactMap { Int($0) },
                body: [UInt8](body),
                headerText: String(decoding: headers, as: UTF8.self))
        }
    }
}
