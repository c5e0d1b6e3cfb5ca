import Foundation

/// What is known about a `.part` file, kept beside it as `.<file>.part.json`, so a later run can
/// ask for the rest with `Range` + `If-Range` (RFC 9110 §13.1.5) and check the answer.
struct ResumeRecord: Codable, Sendable, Equatable {
    var schema = 1
    /// The URL the data came from, credentials replaced by `***` (docs/status-files.md): a partial download
    /// left behind by a failed job must not keep a password in the destination.
    var url: String
    /// A strong ETag; weak ones (`W/`) cannot validate byte ranges.
    var etag: String?
    var lastModified: String?
    /// The complete size announced by the server, when it did.
    var size: Int64?

    init(url: String, etag: String?, lastModified: String?, size: Int64?) {
        self.url = url
        self.etag = etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
        self.lastModified = lastModified
        self.size = size
    }

    /// The `If-Range` value: the strong ETag, else Last-Modified.
    var validator: String? { etag ?? lastModified }

    static func path(forPart part: String) -> String { part + ".json" }

    /// The temp file `save` writes first: one fixed name per record (a part has one writer), so
    /// a temp left by a crash is found and removed when the part is reopened.
    static func tempPath(forRecord record: String) -> String {
        FileSystem.directoryName(of: record) + "/." + FileSystem.baseName(of: record) + ".tmp"
    }

    static func load(_ path: String) -> ResumeRecord? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONDecoder().decode(ResumeRecord.self, from: data)
    }

    func save(to path: String, durable: Bool) throws(SystemError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data()
        try AtomicFile.write(Array(data), to: path, durable: durable, mode: 0o600, temp: ResumeRecord.tempPath(forRecord: path))
    }
}
