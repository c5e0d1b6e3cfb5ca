import Testing
@testable import DropFetch

/// The error `JobFileParser.parse` throws for `bytes`, or nil when it parses.
private func parseError(_ bytes: [UInt8]) -> JobFileError? {
    do {
        _ = try JobFileParser.parse(bytes)
        return nil
    } catch {
        return error
    }
}

private func parse(_ text: String) throws -> JobSpec {
    try JobFileParser.parse(Array(text.utf8))
}

private let sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

@Suite struct JobFileParserValidTests {
    @Test func designExample() throws {
        let job = try parse("""
            # comments and blank lines are ignored
            priority=10
            https://example.org/a.iso\thttps://mirror.example.net/a.iso
              out=a.iso
              checksum=sha-256=\(sha256)
              header=Authorization: Bearer abc
            https://example.org/b.tar.gz

            """)
        #expect(job == JobSpec(priority: 10, downloads: [
            DownloadSpec(urls: ["https://example.org/a.iso", "https://mirror.example.net/a.iso"],
                         out: "a.iso", checksum: Checksum(algorithm: .sha256, hex: sha256),
                         headers: ["Authorization: Bearer abc"], line: 3),
            DownloadSpec(urls: ["https://example.org/b.tar.gz"], line: 7),
        ]))
    }

    @Test func everyKey() throws {
        let md5 = "D41D8CD98F00B204E9800998ECF8427E"
        let sha512 = String(repeating: "aB", count: 64)
        let job = try parse("""
            priority=-5
            class=iso
            https://a.example/x.iso
            \tout=x.iso
            \tdir=linux/isos
            \tchecksum=MD5=\(md5)
            \theader=Accept: */*
            \theader=X-Token:\tsecret value
            \tmax-download-limit=500K
            https://b.example/y
              checksum=SHA-512=\(sha512)
              max-download-limit=2M
            https://c.example/z
              max-download-limit=1g
            https://d.example/w
              max-download-limit=1234
            """)
        #expect(job.priority == -5)
        #expect(job.className == "iso")
        #expect(job.downloads.count == 4)
        #expect(job.downloads[0] == DownloadSpec(
            urls: ["https://a.example/x.iso"], out: "x.iso", dir: "linux/isos",
            checksum: Checksum(algorithm: .md5, hex: md5.lowercased()),
            headers: ["Accept: */*", "X-Token:\tsecret value"], maxDownloadLimit: 500 * 1024, line: 3))
        #expect(job.downloads[1].checksum == Checksum(algorithm: .sha512, hex: sha512.lowercased()))
        #expect(job.downloads[1].maxDownloadLimit == Int64(2 << 20))
        #expect(job.downloads[1].line == 10)
        #expect(job.downloads[2].maxDownloadLimit == Int64(1 << 30))
        #expect(job.downloads[3].maxDownloadLimit == 1234)
    }

    @Test func mirrorsOnOneLineWithStrayTabs() throws {
        let job = try parse("https://a.example/f\t\thttps://b.example/f\tftp://c.example/f\t\n")
        #expect(job.downloads.map(\.urls) == [["https://a.example/f", "https://b.example/f", "ftp://c.example/f"]])
    }

    @Test func crlfAndBOM() throws {
        let text = "\u{FEFF}# list\r\npriority=1\r\nhttps://a.example/f\r\n  out=f.bin\r\n\r\nhttps://b.example/g\r\n"
        let job = try parse(text)
        #expect(job.priority == 1)
        #expect(job.downloads.map(\.line) == [3, 6])
        #expect(job.downloads[0].out == "f.bin")
        #expect(job.downloads[1].urls == ["https://b.example/g"])
    }

    @Test func carriageReturnAsLastByteEndsTheLine() throws {
        let job = try parse("https://a.example/f\r")
        #expect(job.downloads[0].urls == ["https://a.example/f"])
    }

    @Test func blankWhitespaceAndCommentLinesAreSkipped() throws {
        let job = try parse("\n   \n\t\n#x=y\n#  https://ignored.example/\nhttps://a.example/f\n  \n# note\n  out=f\n")
        #expect(job.downloads == [DownloadSpec(urls: ["https://a.example/f"], out: "f", line: 6)])
    }

    @Test func urlsMayCarryUserinfoPortsIPv6AndQueries() throws {
        let urls = ["https://user:pw@host.example:8443/a?b=c#d", "http://[::1]:8080/x", "sftp://h/~/f",
                    "https://host.example", "https://host:/x", "svn+ssh://h/r", "https://h/caf%C3%A9/é"]
        let job = try parse(urls.joined(separator: "\n"))
        #expect(job.downloads.map(\.urls) == urls.map { [$0] })
    }

    @Test func priorityRangeAndSpellings() throws {
        #expect(try parse("priority=3000000000\nhttps://a/").priority == 3_000_000_000)
        #expect(try parse("priority=9223372036854775807\nhttps://a/").priority == Int(Int64.max))
        #expect(try parse("priority=-9223372036854775808\nhttps://a/").priority == Int(Int64.min))
        #expect(try parse("priority = +7 \nhttps://a/").priority == 7)
        #expect(try parse("https://a/").priority == nil)
    }

    @Test func internetShortcut() throws {
        let job = try parse("[InternetShortcut]\nURL=https://example.org/file.iso\n")
        #expect(job == JobSpec(downloads: [DownloadSpec(urls: ["https://example.org/file.iso"], line: 2)]))
    }

    /// A shortcut as Windows writes it, with `url` as the value of its `URL=` line (line 8).
    private func windowsShortcut(url: String) -> String {
        "\u{FEFF}; made by Explorer\r\n[{000214A0-0000-0000-C000-000000000046}]\r\nProp3=19,11\r\n"
            + "URL=https://wrong.example/\r\n[internetshortcut]\r\nIDList=\r\nHotKey=0\r\n"
            + "url = \(url) \r\nIconFile=C:\\icon.ico\r\njunk line\r\n[Other]\r\nURL=x\r\n"
    }

    @Test func internetShortcutWindowsStyle() throws {
        let job = try parse(windowsShortcut(url: "https://example.org/a%20b.iso?x=1"))
        #expect(job.downloads == [DownloadSpec(urls: ["https://example.org/a%20b.iso?x=1"], line: 8)])
        let error = parseError(Array(windowsShortcut(url: "https://example.org/a b.iso").utf8))
        #expect(error == JobFileError(line: 8, message: "malformed URL 'https://example.org/a b.iso'"
                                      + " (expected scheme://host/…; mirrors are separated by TAB, not spaces)"))
    }

    @Test func internetShortcutAfterBlankAndHashComment() throws {
        let job = try parse("\n# c\n  [ InternetShortcut ]  \nURL=ftp://h/f\n")
        #expect(job.downloads == [DownloadSpec(urls: ["ftp://h/f"], line: 4)])
    }

    @Test func headerNamesMayUseEveryTokenCharacter() throws {
        let job = try parse("https://a/\n  header=X-a!#$%&'*+-.^_`|~9: v\n  header=Host: example.org\n")
        #expect(job.downloads[0].headers == ["X-a!#$%&'*+-.^_`|~9: v", "Host: example.org"])
    }

    @Test func dirAcceptsNestedUnicodeComponents() throws {
        let job = try parse("https://a/\n  dir=a/b c/ñ/x.y\n")
        #expect(job.downloads[0].dir == "a/b c/ñ/x.y")
    }
}

/// One invalid job file and the error it must give.
struct BadJobFile: Sendable, CustomTestStringConvertible {
    var testDescription: String
    var bytes: [UInt8]
    var line: Int?
    var message: String

    init(_ name: String, _ text: String, line: Int?, _ message: String) {
        self.init(name, Array(text.utf8), line: line, message)
    }

    init(_ name: String, _ bytes: [UInt8], line: Int?, _ message: String) {
        self.testDescription = name
        self.bytes = bytes
        self.line = line
        self.message = message
    }
}

private let u = "https://a.example/f\n"

let badJobFiles: [BadJobFile] = [
    // Whole-file checks.
    BadJobFile("invalid UTF-8", Array("# a\nhttps://a/\n  out=".utf8) + [0xC3, 0x28] + [0x0A], line: 3,
               "not valid UTF-8"),
    BadJobFile("overlong UTF-8 after BOM", [0xEF, 0xBB, 0xBF] + Array("https://a/".utf8) + [0xC0, 0xAF], line: 1,
               "not valid UTF-8"),
    BadJobFile("NUL byte", Array("https://a/\n  out=a".utf8) + [0] + Array("b\n".utf8), line: 2,
               "NUL byte in the job file"),
    BadJobFile("NUL before invalid UTF-8", Array("x".utf8) + [0, 0x0A, 0xFF], line: 1, "NUL byte in the job file"),
    BadJobFile("bare CR", "https://a/\r\n  header=X-A: 1\rX-B: 2\r\n", line: 2,
               "carriage return not followed by a line feed"),
    BadJobFile("no URL", "# nothing\npriority=3\n\n", line: nil, "no URL in the job file"),
    BadJobFile("empty file", "", line: nil, "no URL in the job file"),
    BadJobFile("only a BOM", "\u{FEFF}", line: nil, "no URL in the job file"),
    // Internet Shortcut.
    BadJobFile("shortcut without URL=", "; c\n[InternetShortcut]\nIconIndex=0\n[Other]\nURL=https://a/\n", line: 2,
               "[InternetShortcut] section has no URL="),
    BadJobFile("no InternetShortcut section", "\n[Desktop Entry]\nURL=https://a/\n", line: 2,
               "no [InternetShortcut] section"),
    BadJobFile("duplicate URL=", "[InternetShortcut]\nURL=https://a/\nurl=https://b/\n", line: 3,
               "duplicate key 'url'"),
    BadJobFile("shortcut malformed URL", "[InternetShortcut]\r\nURL=javascript:alert(1)\r\n", line: 2,
               "malformed URL 'javascript:alert(1)' (expected scheme://host/…)"),
    BadJobFile("shortcut empty URL=", "[InternetShortcut]\nURL=\n", line: 2, "URL= is empty"),
    BadJobFile("malformed section header", "[InternetShortcut]\nURL=https://a/\n[Other\n", line: 3,
               "malformed section header '[Other'"),
    // URL-list structure.
    BadJobFile("option before any URL", "priority=1\n  out=a\n\(u)", line: 2, "option line before any URL"),
    BadJobFile("job key after first URL", "\(u)  out=a\npriority=1\n", line: 3,
               "job-level key 'priority' must come before the first URL"),
    BadJobFile("unknown job key", "# x\nspeed=fast\n\(u)", line: 2, "unknown key 'speed'"),
    BadJobFile("unknown download key", "\(u)  out=a\n  foo=bar\n", line: 3, "unknown key 'foo'"),
    BadJobFile("unknown key after first URL", "\(u)foo=bar\n", line: 2, "unknown key 'foo'"),
    BadJobFile("download key in column 1", "\(u)out=a\n", line: 2, "download key 'out' must be indented under its URL"),
    BadJobFile("job key indented", "\(u)  class=x\n", line: 2,
               "'class' is a job-level key: write it in column 1 before the first URL"),
    BadJobFile("option line without =", "\(u)\n  out a.iso\n", line: 3, "malformed line 'out' (expected key=value; the line is not shown, it may hold a secret)"),
    BadJobFile("option line with empty key", "\(u)  =a\n", line: 2, "malformed line (expected key=value; the line is not shown, it may hold a secret)"),
    BadJobFile("indented mirror", "\(u)  https://b.example/f\n", line: 2,
               "a URL must start in column 1 (mirrors go on the same line, separated by TAB)"),
    BadJobFile("indented comment", "\(u)  # out=a\n", line: 2, "malformed line (expected key=value; the line is not shown, it may hold a secret)"),
    BadJobFile("URL without scheme", "example.org/file.iso\n", line: 1,
               "malformed URL 'example.org/file.iso' (expected scheme://host/…)"),
    BadJobFile("mirrors separated by space", "\(u)https://a/x https://b/x\n", line: 2,
               "malformed URL 'https://a/x https://b/x' (expected scheme://host/…; mirrors are separated by TAB, not spaces)"),
    BadJobFile("empty host", "https:///etc/passwd\n", line: 1, "malformed URL 'https:///etc/passwd' (expected scheme://host/…)"),
    BadJobFile("empty host after userinfo", "https://u@:80/\n", line: 1, "malformed URL 'https://***@:80/' (expected scheme://host/…)"),
    BadJobFile("non-numeric port", "https://h:x/\n", line: 1, "malformed URL 'https://h:x/' (expected scheme://host/…)"),
    BadJobFile("scheme starting with digit", "1http://h/\n", line: 1, "malformed URL '1http://h/' (expected scheme://host/…)"),
    BadJobFile("unclosed IPv6", "http://[::1/\n", line: 1, "malformed URL 'http://[::1/' (expected scheme://host/…)"),
    BadJobFile("control character in URL", "https://h/a\u{7F}b\n", line: 1, "malformed URL 'https://h/a\\u{7F}b' (expected scheme://host/…)"),
    BadJobFile("bad second mirror", "\(u)https://a/x\thttp//b/x\n", line: 2, "malformed URL 'http//b/x' (expected scheme://host/…)"),
    BadJobFile("section header inside URL list", "\(u)[InternetShortcut]\n", line: 2,
               "malformed URL '[InternetShortcut]' (expected scheme://host/…)"),
    // Job keys.
    BadJobFile("priority not integer", "priority=high\n\(u)", line: 1,
               "priority 'high' is not an integer in -9223372036854775808...9223372036854775807"),
    BadJobFile("priority beyond Int64", "priority=9223372036854775808\n\(u)", line: 1,
               "priority '9223372036854775808' is out of range -9223372036854775808...9223372036854775807"),
    BadJobFile("priority below Int64", "# c\npriority=-9223372036854775809\n\(u)", line: 2,
               "priority '-9223372036854775809' is out of range -9223372036854775808...9223372036854775807"),
    BadJobFile("priority sign only", "priority=-\n\(u)", line: 1,
               "priority '-' is not an integer in -9223372036854775808...9223372036854775807"),
    BadJobFile("duplicate priority", "priority=1\npriority=1\n\(u)", line: 2, "duplicate key 'priority'"),
    BadJobFile("empty class", "class=\n\(u)", line: 1, "class is empty"),
    BadJobFile("duplicate class", "class=a\n\nclass=b\n\(u)", line: 3, "duplicate key 'class'"),
    // out and dir.
    BadJobFile("out escaping", "\(u)  out=../etc/passwd\n", line: 2,
               "invalid out '../etc/passwd': component '..' may not be '.' or '..'"),
    BadJobFile("out absolute", "\(u)  out=/etc/passwd\n", line: 2,
               "invalid out '/etc/passwd': is an absolute path (use dir= for the folder)"),
    BadJobFile("out hidden folder", "\(u)  out=a/.git/f\n", line: 2,
               "invalid out 'a/.git/f': component '.git' starts with '.'"),
    BadJobFile("out trailing slash", "\(u)  out=a/\n", line: 2, "invalid out 'a/': file name '' is empty"),
    BadJobFile("out dot-dot", "\(u)  out=..\n", line: 2, "invalid out '..': may not be '.' or '..'"),
    BadJobFile("out hidden", "\(u)  out=.bashrc\n", line: 2, "invalid out '.bashrc': starts with '.'"),
    BadJobFile("out empty", "\(u)  out=\n", line: 2, "invalid out '': is empty"),
    BadJobFile("out control character", "\(u)  out=a\u{1B}[2Jb\n", line: 2,
               "invalid out 'a\\u{1B}[2Jb': contains a control character"),
    BadJobFile("out too long", "\(u)  out=\(String(repeating: "x", count: 256))\n", line: 2,
               "invalid out '\(String(repeating: "x", count: 80))…': is 256 bytes long, more than 255"),
    BadJobFile("duplicate out", "\(u)  out=a\n  out=b\n", line: 3, "duplicate key 'out'"),
    BadJobFile("absolute dir with dot-dot", "\(u)  dir=/srv/dl/../../etc\n", line: 2,
               "invalid dir '/srv/dl/../../etc': component '..' may not be '.' or '..'"),
    BadJobFile("absolute dir with dot", "\(u)  dir=/srv/./dl\n", line: 2,
               "invalid dir '/srv/./dl': component '.' may not be '.' or '..'"),
    BadJobFile("dir escaping", "\(u)  dir=a/../../b\n", line: 2, "invalid dir 'a/../../b': component '..' may not be '.' or '..'"),
    BadJobFile("dir empty component", "\(u)  dir=a//b\n", line: 2, "invalid dir 'a//b': component '' is empty"),
    BadJobFile("dir trailing slash", "\(u)  dir=a/\n", line: 2, "invalid dir 'a/': component '' is empty"),
    BadJobFile("dir hidden component", "\(u)  dir=a/.git\n", line: 2, "invalid dir 'a/.git': component '.git' starts with '.'"),
    BadJobFile("dir dot", "\(u)  dir=.\n", line: 2, "invalid dir '.': component '.' may not be '.' or '..'"),
    BadJobFile("duplicate dir", "\(u)  dir=a\n  dir=a\n", line: 3, "duplicate key 'dir'"),
    // checksum.
    BadJobFile("checksum without algorithm", "\(u)  checksum=\(sha256)\n", line: 2,
               "invalid checksum '\(sha256)': expected ALGORITHM=HEX"),
    BadJobFile("checksum sha256 spelling", "\(u)  checksum=sha256=\(sha256)\n", line: 2,
               "invalid checksum 'sha256=\(sha256)': unknown algorithm 'sha256' (use sha-256, sha-512 or md5)"),
    BadJobFile("checksum short", "\(u)  checksum=sha-256=\(sha256.dropLast())\n", line: 2,
               "invalid checksum 'sha-256=\(sha256.dropLast())': sha-256 needs 64 hex digits, got 63"),
    BadJobFile("checksum not hex", "\(u)  checksum=md5=\(String(repeating: "g", count: 32))\n", line: 2,
               "invalid checksum 'md5=\(String(repeating: "g", count: 32))': digest is not hexadecimal"),
    BadJobFile("checksum sha-512 given sha-256 digest", "\(u)  checksum=sha-512=\(sha256)\n", line: 2,
               "invalid checksum 'sha-512=\(sha256)': sha-512 needs 128 hex digits, got 64"),
    BadJobFile("duplicate checksum", "\(u)  checksum=md5=\(String(repeating: "0", count: 32))\n"
               + "  checksum=md5=\(String(repeating: "0", count: 32))\n", line: 3, "duplicate key 'checksum'"),
    // header.
    BadJobFile("header without colon", "\(u)  header=Authorization Bearer abc\n", line: 2,
               "invalid header: expected 'Name: value' (its value is not shown)"),
    BadJobFile("header name with space", "\(u)  header=X Y: 1\n", line: 2,
               "invalid header: the name is not an HTTP token (its value is not shown)"),
    BadJobFile("header empty name", "\(u)  header=: 1\n", line: 2, "invalid header: the name is empty (its value is not shown)"),
    BadJobFile("header empty value", "\(u)  header=Host:\n", line: 2, "invalid header 'Host': the value is empty (its value is not shown)"),
    BadJobFile("header control character", "\(u)  header=Cookie: a\u{0B}b\n", line: 2,
               "invalid header 'Cookie': the value contains a control character (its value is not shown)"),
    BadJobFile("header Range", "\(u)  header=range: bytes=0-\n", line: 2,
               "invalid header 'range': 'range' is set by dropfetch itself (its value is not shown)"),
    // max-download-limit.
    BadJobFile("limit unit", "\(u)  max-download-limit=5KB\n", line: 2,
               "invalid max-download-limit '5KB': expected bytes per second, such as 500K or 2M"),
    BadJobFile("limit negative", "\(u)  max-download-limit=-1\n", line: 2,
               "invalid max-download-limit '-1': expected bytes per second, such as 500K or 2M"),
    BadJobFile("limit empty", "\(u)  max-download-limit=\n", line: 2,
               "invalid max-download-limit '': expected bytes per second, such as 500K or 2M"),
    BadJobFile("limit overflow", "\(u)  max-download-limit=9000000000G\n", line: 2,
               "invalid max-download-limit '9000000000G': out of range (at most 2^62 bytes (4611686018427387904) per second)"),
    BadJobFile("limit just over 2^62", "\(u)  max-download-limit=4294967297G\n", line: 2,
               "invalid max-download-limit '4294967297G': out of range (at most 2^62 bytes (4611686018427387904) per second)"),
    BadJobFile("limit just over 2^62 in bytes", "\(u)  max-download-limit=4611686018427387905\n", line: 2,
               "invalid max-download-limit '4611686018427387905': out of range (at most 2^62 bytes (4611686018427387904) per second)"),
    BadJobFile("limit beyond Int64 digits", "\(u)  max-download-limit=99999999999999999999\n", line: 2,
               "invalid max-download-limit '99999999999999999999': out of range (at most 2^62 bytes (4611686018427387904) per second)"),
    BadJobFile("duplicate limit", "\(u)  max-download-limit=1M\n  max-download-limit=2M\n", line: 3,
               "duplicate key 'max-download-limit'"),
    // Line numbers count CRLF lines, the BOM line and the blank lines.
    BadJobFile("line number with CRLF and BOM", "\u{FEFF}\r\n# c\r\nhttps://a/\r\n\r\n  out=a\r\n  out=b\r\n", line: 6,
               "duplicate key 'out'"),
]

@Suite struct JobFileParserErrorTests {
    @Test(arguments: badJobFiles)
    func invalidJobFile(_ bad: BadJobFile) throws {
        let error = try #require(parseError(bad.bytes))
        #expect(error.line == bad.line)
        #expect(error.message == bad.message)
    }

    @Test func descriptionNamesTheLine() {
        #expect(JobFileError(line: 4, message: "unknown key 'x'").description == "line 4: unknown key 'x'")
        #expect(JobFileError(line: nil, message: "no URL in the job file").description == "no URL in the job file")
    }

    @Test func credentialsNeverAppearInMessages() throws {
        let cases = [
            "https://alice:s3cret@h/a b\n",
            "https://a/\n  header=Authorization: Bearer s3cret\n  header=Authorization: Bearer s3cret\u{1}\n",
            "https://a/\n  Proxy-Authorization: Basic s3cret\n",
            "https:/alice:s3cret@h/x\n",
        ]
        for text in cases {
            let error = try #require(parseError(Array(text.utf8)))
            #expect(!error.message.contains("s3cret"), "\(error)")
        }
    }

    @Test func quotingEscapesAndTruncates() {
        #expect(JobFileParser.quoted("a\tb\u{0}c\u{9B}d\u{2028}'\\") == "'a\\tb\\u{0}c\\u{9B}d\\u{2028}\\'\\\\'")
        let long = String(repeating: "é", count: 81)
        #expect(JobFileParser.quoted(long) == "'\(String(repeating: "é", count: 80))…'")
        #expect(JobFileParser.quoted(String(repeating: "é", count: 80)) == "'\(String(repeating: "é", count: 80))'")
    }

    @Test func atLeastTwentyFiveInvalidCases() {
        #expect(badJobFiles.count >= 25)
        #expect(Set(badJobFiles.map(\.testDescription)).count == badJobFiles.count)
    }

    @Test("a URL over 64 KiB is invalid_job naming its line and size, never passed to libcurl or quoted")
    func overlongURL() {
        let url = "https://example.org/" + String(repeating: "a", count: 70_000)
        do {
            _ = try JobFileParser.parse(Array(("# big\n" + url + "\n").utf8))
            Issue.record("a 70 KB URL was accepted")
        } catch {
            #expect(error.line == 2)
            #expect(error.message.contains("70020 bytes") && !error.message.contains("aaaa"), "\(error.message)")
        }
    }
}
