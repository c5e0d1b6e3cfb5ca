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

    /// Runs `curl -s -m 45 -o BODY -D HEADERS -w '%{stderr}%{http_code}\n' arguments… 2>CODES` and waits for it.
    ///
    /// Only the first URL's body is kept; those of further URLs go to /dev/null. The codes go to a
    /// file, not a pipe: reading a pipe to its end waits for every process holding its write end, and
    /// a stalled server ends the run with curl's exit 28 (a later `-m` wins) before the suite's limit.
    static func run(_ arguments: [String]) throws -> CurlRun {
        try start(arguments).finish()
    }

    /// Starts curl without waiting, for runs that overlap.
    static func start(_ arguments: [String]) throws -> Running {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("curlrun-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let process = try ChildProcess("/usr/bin/curl", [
            "-s", "-m", "45", "-o", folder.appendingPathComponent("body").path,
            "-D", folder.appendingPathComponent("headers").path, "-w", "%{stderr}%{http_code}\n",
        ] + arguments, stderr: .file(folder.appendingPathComponent("codes").path))
        return Running(process: process, folder: folder)
    }

    /// A curl process that has been started; `finish()` waits for it and collects its results.
    final class Running {
        private let process: ChildProcess
        private let folder: URL

        init(process: ChildProcess, folder: URL) {
            self.process = process
            self.folder = folder
        }

        func finish() throws -> CurlRun {
            let exitCode = process.wait()
            defer { try? FileManager.default.removeItem(at: folder) }
            let printed = (try? Data(contentsOf: folder.appendingPathComponent("codes"))) ?? Data()
            let body = (try? Data(contentsOf: folder.appendingPathComponent("body"))) ?? Data()
            let headers = (try? Data(contentsOf: folder.appendingPathComponent("headers"))) ?? Data()
            return CurlRun(
                exitCode: exitCode,
                httpCodes: String(decoding: printed, as: UTF8.self).split(separator: "\n").compactMap { Int($0) },
                body: [UInt8](body),
                headerText: String(decoding: headers, as: UTF8.self))
        }
    }
}
