/// The on-disk form of a resume record (`.<file>.part.json`): one JSON object, the record's fields
/// and a `seal`, padded with spaces to a fixed size and rewritten in place with pwrite(2).
///
/// An update overwrites blocks the file already has, so it never needs free space (a full disk
/// does not freeze the record) and creates, renames and frees no file. The seal is the
/// HMAC-SHA256 (RecordKey) of the record's canonical JSON (sorted keys, no seal): it proves an
/// agent of this user wrote it, so a planted, altered or torn record reads as no record at all.
enum ResumeRecordFile {
    /// The size of a new record file: a redacted URL and two validators fit in far less.
    static let defaultSize = 2048
    /// Larger files are not read: no record of ours grows past this.
    static let maxFileSize = 1 << 18

    /// The whole file for `record`, sealed with `key`, `size` bytes long; nil when it does not fit.
    static func image(_ record: ResumeRecord, key: RecordKey, size: Int) -> [UInt8]? {
        let json = record.encoded()
        guard json.first == UInt8(ascii: "{"), json.count > 2 else { return nil }
        var bytes = Array(#"{"seal":""#.utf8) + hex(key.seal(json)) + Array(#"","#.utf8)
        bytes += json.dropFirst()
        bytes.append(UInt8(ascii: "\n"))
        guard bytes.count <= size else { return nil }
        return bytes + [UInt8](repeating: UInt8(ascii: " "), count: size - bytes.count)
    }

    /// A new file for `record`: `defaultSize` bytes, or as many times more as it takes.
    static func image(_ record: ResumeRecord, key: RecordKey) -> [UInt8] {
        var size = defaultSize
        while true {
            if let bytes = image(record, key: key, size: size) { return bytes }
            size *= 2
        }
    }

    /// The record if its seal verifies under `key`; nil otherwise. Without a key (a control
    /// command that cannot read it) the seal is not checked: such a reader only uses a record to
    /// find data it is about to remove.
    static func unseal(_ bytes: [UInt8], key: RecordKey?) -> ResumeRecord? {
        guard let record = ResumeRecord.decode(bytes) else { return nil }
        guard let key else { return record }
        guard let seal = ResumeRecord.seal(in: bytes), let mac = unhex(seal) else { return nil }
        return key.verifies(mac, of: record.encoded()) ? record : nil
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func hex(_ bytes: [UInt8]) -> [UInt8] {
        bytes.flatMap { [hexDigits[Int($0 >> 4)], hexDigits[Int($0 & 0x0F)]] }
    }

    private static func unhex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 64 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
