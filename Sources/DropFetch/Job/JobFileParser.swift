/// Parses a `.url` job file (docs/job-files.md) into a ``JobSpec``: an Internet Shortcut or an aria2-style URL list.
///
/// The whole file is checked first (UTF-8, no NUL, no bare CR), then parsed; the first problem is
/// thrown as a ``JobFileError`` naming its 1-based line. Quoted values in messages are escaped,
/// truncated and stripped of credentials, so a message can go into a log or status file as it is.
public enum JobFileParser {
    /// One line of the file without its line end; its bytes are valid UTF-8 with no NUL or CR.
    struct Line {
        var number: Int
        var bytes: ArraySlice<UInt8>
    }

    /// The ASCII bytes the job-file syntax is made of.
    enum ASCII {
        static let tab = UInt8(ascii: "\t")
        static let lineFeed = UInt8(ascii: "\n")
        static let carriageReturn = UInt8(ascii: "\r")
        static let space = UInt8(ascii: " ")
        static let hash = UInt8(ascii: "#")
        static let semicolon = UInt8(ascii: ";")
        static let equals = UInt8(ascii: "=")
        static let colon = UInt8(ascii: ":")
        static let slash = UInt8(ascii: "/")
        static let leftBracket = UInt8(ascii: "[")
        static let rightBracket = UInt8(ascii: "]")
    }

    static let jobKeys: Set<String> = ["priority", "class", "duplicates"]

    /// Parses `bytes`, a whole job file. A UTF-8 BOM at the start is skipped.
    public static func parse(_ bytes: [UInt8]) throws(JobFileError) -> JobSpec {
        let lines = try splitLines(bytes)
        let first = lines.first { line in
            let content = trimmed(line.bytes)
            return !content.isEmpty && content.first != ASCII.hash && content.first != ASCII.semicolon
        }
        if let first, trimmed(first.bytes).first == ASCII.leftBracket {
            return try parseShortcut(lines)
        }
        return try parseURLList(lines)
    }

    // MARK: - Lines

    /// Splits at LF (dropping the CR of CRLF) and checks each line's bytes.
    ///
    /// A CR as the very last byte of the file is taken as a line end too; any other CR not followed by
    /// LF is an error, because it would end a header line early on the wire.
    static func splitLines(_ bytes: [UInt8]) throws(JobFileError) -> [Line] {
        var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var lines: [Line] = []
        // Most job files are a URL and an option line or two: one allocation, not one a line.
        lines.reserveCapacity(4)
        while start < bytes.count {
            let lineFeed = bytes[start...].firstIndex(of: ASCII.lineFeed)
            var end = lineFeed ?? bytes.count
            if end > start, bytes[end - 1] == ASCII.carriageReturn { end -= 1 }
            let line = Line(number: lines.count + 1, bytes: bytes[start..<end])
            if line.bytes.contains(0) {
                throw JobFileError(line: line.number, message: "NUL byte in the job file")
            }
            if line.bytes.contains(ASCII.carriageReturn) {
                throw JobFileError(line: line.number, message: "carriage return not followed by a line feed")
            }
            // ASCII is valid UTF-8 as it is; only a line with other bytes is decoded to be checked.
            if !line.bytes.allSatisfy({ $0 < 0x80 }),
               !String(decoding: line.bytes, as: UTF8.self).utf8.elementsEqual(line.bytes) {
                throw JobFileError(line: line.number, message: "not valid UTF-8")
            }
            lines.append(line)
            start = (lineFeed ?? bytes.count) + 1
        }
        return lines
    }

    // MARK: - Internet Shortcut

    /// The `[InternetShortcut]` form: only `URL=` of that section counts (names case-insensitive).
    ///
    /// Lines starting with `;` or `#` are comments; lines without `=` and other keys and sections are
    /// ignored, as Windows does. A second `URL=` is an error rather than a silent choice.
    static func parseShortcut(_ lines: [Line]) throws(JobFileError) -> JobSpec {
        var firstHeader: Int?
        var section: Int?
        var inShortcut = false
        var found: DownloadSpec?
        for line in lines {
            let content = trimmed(line.bytes)
            guard let lead = content.first, lead != ASCII.hash, lead != ASCII.semicolon else { continue }
            if lead == ASCII.leftBracket {
                guard content.count >= 2, content.last == ASCII.rightBracket else {
                    throw JobFileError(line: line.number,
                                       message: "malformed section header \(quoted(text(content)))")
                }
                let name = FileName.asciiLowercased(text(trimmed(content.dropFirst().dropLast())))
                inShortcut = name == "internetshortcut"
                firstHeader = firstHeader ?? line.number
                if inShortcut, section == nil { section = line.number }
                continue
            }
            guard inShortcut, let equals = content.firstIndex(of: ASCII.equals) else { continue }
            let key = text(trimmed(content[..<equals]))
            guard FileName.asciiLowercased(key) == "url" else { continue }
            if found != nil {
                throw JobFileError(line: line.number, message: "duplicate key \(quoted(key))")
            }
            let url = text(trimmed(content[(equals + 1)...]))
            guard !url.isEmpty else { throw JobFileError(line: line.number, message: "URL= is empty") }
            guard url.utf8.count <= maxURLBytes else {
                throw JobFileError(line: line.number, message: "URL of \(url.utf8.count) bytes, over the limit of \(maxURLBytes)")
            }
            guard isWellFormedURL(url) else { throw malformedURL(url, line: line.number) }
            found = DownloadSpec(urls: [url], line: line.number)
        }
        guard let section else {
            throw JobFileError(line: firstHeader, message: "no [InternetShortcut] section")
        }
        guard let found else {
            throw JobFileError(line: section, message: "[InternetShortcut] section has no URL=")
        }
        return JobSpec(downloads: [found])
    }

    // MARK: - URL list

    /// The aria2 input-file subset: job keys, then URL lines with indented option lines.
    ///
    /// A job without any URL is reported with line nil: the fault is the whole file, and pointing
    /// at its last line (often a comment, or nothing for an empty file) would mislead.
    static func parseURLList(_ lines: [Line]) throws(JobFileError) -> JobSpec {
        var job = JobSpec(downloads: [])
        var current: DownloadDraft?
        for line in lines {
            let bytes = line.bytes
            guard let lead = bytes.first, !trimmed(bytes).isEmpty, lead != ASCII.hash else { continue }
            if lead == ASCII.space || lead == ASCII.tab {
                guard current != nil else {
                    throw JobFileError(line: line.number, message: "option line before any URL")
                }
                try applyDownloadOption(trimmed(bytes), line: line.number, to: &current!)
                continue
            }
            if let (key, value) = keyValue(bytes) {
                if jobKeys.contains(key) {
                    guard current == nil else {
                        throw JobFileError(line: line.number,
                                           message: "job-level key '\(key)' must come before the first URL")
                    }
                    try applyJobOption(key, value, line: line.number, to: &job)
                } else if isDownloadKey(key) {
                    throw JobFileError(line: line.number,
                                       message: "download key '\(key)' must be indented under its URL")
                } else {
                    throw JobFileError(line: line.number, message: "unknown key '\(key)'")
                }
                continue
            }
            if let finished = current { try append(finished, to: &job) }
            current = DownloadDraft(try parseURLLine(bytes, line: line.number))
        }
        if let finished = current { try append(finished, to: &job) }
        guard !job.downloads.isEmpty else {
            throw JobFileError(line: nil, message: "no URL in the job file")
        }
        return job
    }

    /// Adds a finished download to the job, and its ignored aria2 options to the job's list.
    static func append(_ draft: DownloadDraft, to job: inout JobSpec) throws(JobFileError) {
        job.downloads.append(try draft.finished())
        for name in draft.ignored where !job.ignoredOptions.contains(name) {
            job.ignoredOptions.append(name)
        }
    }

    /// A column-1 line is `key=value` when what precedes its first `=` is a key name; else it is a URL line.
    static func keyValue(_ bytes: ArraySlice<UInt8>) -> (key: String, value: String)? {
        guard let equals = bytes.firstIndex(of: ASCII.equals) else { return nil }
        let key = trimmed(bytes[..<equals])
        guard isKeyName(key) else { return nil }
        return (text(key), text(trimmed(bytes[(equals + 1)...])))
    }

    static func isKeyName(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy {
            FileName.isASCIIAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
    }

    /// The longest URL a job may name: far beyond any server's request-line limit (nginx's is 8 KiB).
    static let maxURLBytes = 65_536

    /// A URL line: one URL, or several mirrors separated by TAB.
    static func parseURLLine(_ bytes: ArraySlice<UInt8>, line: Int) throws(JobFileError) -> DownloadSpec {
        let content = trimmed(bytes)
        // One URL without mirrors (the usual line): no list of fields made.
        let fields = content.contains(ASCII.tab) ? content.split(separator: ASCII.tab) : [content]
        var urls: [String] = []
        urls.reserveCapacity(fields.count)
        for field in fields {
            // libcurl refuses longer input (CURL_MAX_INPUT_LENGTH is 8 MB) as a "bad argument",
            // which would be filed as the agent's own fault; the URL is not quoted (it is huge).
            guard field.count <= maxURLBytes else {
                throw JobFileError(line: line, message: "URL of \(field.count) bytes, over the limit of \(maxURLBytes)")
            }
            let url = text(field)
            guard isWellFormedURL(bytes: field) else { throw malformedURL(url, line: line) }
            urls.append(url)
        }
        return DownloadSpec(urls: urls, line: line)
    }

    static func applyJobOption(_ key: String, _ value: String, line: Int,
                               to job: inout JobSpec) throws(JobFileError) {
        switch key {
        case "priority":
            guard job.priority == nil else { throw duplicate(key, line: line) }
            job.priority = try priority(value, line: line)
        case "duplicates":
            guard job.duplicates == nil else { throw duplicate(key, line: line) }
            switch value {
            case "fetch": job.duplicates = .off
            case "skip": job.duplicates = .skip
            default: throw JobFileError(line: line, message: "duplicates \(quoted(value)) is neither fetch nor skip")
            }
        default:
            guard job.className == nil else { throw duplicate(key, line: line) }
            guard !value.isEmpty else { throw JobFileError(line: line, message: "class is empty") }
            guard !value.unicodeScalars.contains(where: FileName.isControl) else {
                throw JobFileError(line: line, message: "class \(quoted(value)) contains a control character")
            }
            job.className = value
        }
    }

    // MARK: - Errors

    static func duplicate(_ key: String, line: Int) -> JobFileError {
        JobFileError(line: line, message: "duplicate key '\(key)'")
    }

    static func malformedURL(_ url: String, line: Int) -> JobFileError {
        var message = "malformed URL \(quoted(Redaction.url(url))) (expected scheme://host/…"
        if url.unicodeScalars.contains(" ") { message += "; mirrors are separated by TAB, not spaces" }
        return JobFileError(line: line, message: message + ")")
    }

    /// `text` quoted for a message after hiding URL credentials and secret header values.
    static func quotedSecret(_ text: String) -> String {
        quoted(Redaction.url(Redaction.header(text)))
    }

    /// `text` in single quotes, control and line-separator characters escaped, cut after 80 scalars.
    static func quoted(_ text: String) -> String {
        let limit = 80
        var body = ""
        for scalar in text.unicodeScalars.prefix(limit) {
            switch scalar {
            case "\t": body += "\\t"
            case "\n": body += "\\n"
            case "\r": body += "\\r"
            case "\\": body += "\\\\"
            case "'": body += "\\'"
            case _ where FileName.isControl(scalar) || FileName.isInvisibleFormat(scalar)
                || scalar == "\u{2028}" || scalar == "\u{2029}":
                body += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: body.unicodeScalars.append(scalar)
            }
        }
        if text.unicodeScalars.count > limit { body += "…" }
        return "'\(body)'"
    }

    // MARK: - Bytes

    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let first = bytes.firstIndex(where: { $0 != ASCII.space && $0 != ASCII.tab }),
              let last = bytes.lastIndex(where: { $0 != ASCII.space && $0 != ASCII.tab }) else { return [] }
        return bytes[first...last]
    }

    static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
