import Testing
@testable import DropFetch

@Suite struct FileNameValidateTests {
    @Test(arguments: ["a.iso", "résumé.pdf", "a b", "x..y", "a.", "-rf", "_", "ñ", String(repeating: "x", count: 255),
                      String(repeating: "é", count: 127) + "x"])
    func acceptsValidNames(_ name: String) {
        #expect(FileName.validate(name) == nil)
    }

    @Test(arguments: [
        ("", "is empty"),
        (".", "may not be '.' or '..'"),
        ("..", "may not be '.' or '..'"),
        ("a/b", "contains '/'"),
        ("/", "contains '/'"),
        (".hidden", "starts with '.'"),
        (".x.part", "starts with '.'"),
        ("a\u{0}b", "contains a NUL character"),
        ("a\tb", "contains a control character"),
        ("a\nb", "contains a control character"),
        ("a\u{7F}", "contains a control character"),
        ("a\u{85}b", "contains a control character"),
        ("a\u{9F}", "contains a control character"),
        (String(repeating: "x", count: 256), "is 256 bytes long, more than 255"),
        (String(repeating: "é", count: 128), "is 256 bytes long, more than 255"),
    ])
    func rejectsInvalidNames(_ name: String, _ problem: String) {
        #expect(FileName.validate(name) == problem)
    }
}

@Suite struct FileNameFromURLTests {
    @Test(arguments: [
        ("https://example.org/file.iso", "file.iso"),
        ("https://example.org/dir/sub/file.tar.gz?token=1&x=/y#frag/z", "file.tar.gz"),
        ("https://example.org/file#a/b", "file"),
        ("https://example.org/", "index.html"),
        ("https://example.org", "index.html"),
        ("https://example.org?x=/a.iso", "index.html"),
        ("https://example.org/dir/", "index.html"),
        ("https://user:pw@example.org:8443/a.bin", "a.bin"),
        ("https://h/a%20b.txt", "a b.txt"),
        ("https://h/%E2%82%AC%20rates.pdf", "€ rates.pdf"),
        ("https://h/caf%c3%a9", "café"),
        ("https://h/100%25.txt", "100%.txt"),
        ("https://h/bad%zz%4", "bad%zz%4"),
        ("https://h/a%2Fb", "a_b"),
        ("https://h/..%2F..%2Fetc%2Fpasswd", "_.._etc_passwd"),
        ("https://h/a%00b%0Ac", "a_b_c"),
        ("https://h/%FFx%C3", "_x_"),
        ("https://h/...hidden", "hidden"),
        ("https://h/%2E%2E", "index.html"),
        ("https://h/..", "index.html"),
        ("https://h/%20%20a%20%20", "a"),
        ("https://h/%20.%20.x", "x"),
        ("https://h/%C2%9Bname", "_name"),
        ("https://h/a%C2%85b", "a_b"),
        ("file.iso", "file.iso"),
        ("https://h/dir/%2F", "_"),
    ])
    func lastSegmentDecodedAndSanitised(_ url: String, _ expected: String) {
        #expect(FileName.fromURL(url) == expected)
    }

    @Test func longNamesKeepTheirExtension() throws {
        let name = FileName.fromURL("https://h/" + String(repeating: "a", count: 300) + ".iso")
        #expect(name.utf8.count == 255)
        #expect(name == String(repeating: "a", count: 251) + ".iso")

        let tarball = FileName.fromURL("https://h/" + String(repeating: "b", count: 300) + ".tar.gz")
        #expect(tarball == String(repeating: "b", count: 248) + ".tar.gz")
    }

    @Test func truncationCutsOnCharacterBoundaries() throws {
        let name = FileName.fromURL("https://h/" + String(repeating: "%C3%A9", count: 200) + ".txt")
        #expect(name == String(repeating: "é", count: 125) + ".txt")
        #expect(FileName.validate(name) == nil)

        let accented = String(repeating: "e\u{301}", count: 100)
        let cut = try #require(FileName.sanitise(accented))
        #expect(cut.utf8.count <= 255)
        #expect(cut == String(repeating: "e\u{301}", count: 85))
    }

    @Test func oneHugeGraphemeStillGivesAName() throws {
        let zalgo = "a" + String(repeating: "\u{301}", count: 300) + ".txt"
        let name = try #require(FileName.sanitise(zalgo))
        #expect(name.utf8.count == 255)
        #expect(name.unicodeScalars.first == "a")
        #expect(FileName.validate(name) == nil)
    }

    @Test func longExtensionIsNotKept() {
        let name = FileName.fromURL("https://h/" + String(repeating: "c", count: 300) + ".verylongextension")
        #expect(name == String(repeating: "c", count: 255))
    }
}

@Suite struct FileNameSanitiseTests {
    @Test(arguments: [
        ("report.pdf", "report.pdf"),
        ("a/b/c", "a_b_c"),
        ("\u{1B}[31mred", "_[31mred"),
        ("  name  ", "name"),
        ("\u{A0}name\u{2003}", "name"),
        (". .. .x", "x"),
        ("/", "_"),
        ("a\u{2028}b", "a\u{2028}b"),
        ("\t\u{85}.name\n", "name"),
        ("a\tb", "a_b"),
    ])
    func sanitises(_ candidate: String, _ expected: String) {
        #expect(FileName.sanitise(candidate) == expected)
    }

    @Test(arguments: ["", "   ", ".", "..", "...", " . \t. "])
    func nothingUsable(_ candidate: String) {
        #expect(FileName.sanitise(candidate) == nil)
    }

    @Test(arguments: ["../../etc/passwd", ".bashrc", "a\u{0}b", "x\u{85}\u{7F}y", "\t.\tx", String(repeating: "ü", count: 400),
                      "..\u{301}x", "%2e%2e", "\u{FEFF}.x"])
    func resultAlwaysValidates(_ candidate: String) throws {
        let name = try #require(FileName.sanitise(candidate))
        #expect(FileName.validate(name) == nil, "\(name)")
    }
}

@Suite struct FileNameContentDispositionTests {
    @Test(arguments: [
        ("attachment; filename=\"a.iso\"", "a.iso"),
        ("attachment; filename=a.iso", "a.iso"),
        ("attachment;filename=a.iso ; size=3", "a.iso"),
        ("Content-Disposition: attachment; filename=x.bin", "x.bin"),
        ("content-disposition:inline;FILENAME=\"y.bin\"", "y.bin"),
        ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%E2%82%AC%20rates.txt", "€ rates.txt"),
        ("attachment; filename*=utf-8'en'na%C3%AFve.txt; filename=\"naive.txt\"", "naïve.txt"),
        ("attachment; filename*=iso-8859-1''%A3%20rates", "£ rates"),
        ("attachment; filename*=KOI8-R''%C1; filename=plain.txt", "plain.txt"),
        ("attachment; filename*=broken; filename=plain.txt", "plain.txt"),
        ("attachment; filename*=UTF-8''%2E%2E; filename=plain.txt", "plain.txt"),
        ("attachment; filename=\"a\\\"b;c.txt\"; x=y", "a\"b;c.txt"),
        ("attachment; filename=\"../../etc/passwd\"", "_.._etc_passwd"),
        ("attachment; filename=\"%41.txt\"", "%41.txt"),
        ("attachment; filename=\"unterminated.txt", "unterminated.txt"),
        ("filename=bare.txt", "bare.txt"),
        ("attachment; name=\"field\"; filename=\"f.txt\"; filename=\"second.txt\"", "f.txt"),
    ])
    func picksAndSanitisesTheName(_ header: String, _ expected: String) {
        #expect(FileName.fromContentDisposition(header) == expected)
    }

    @Test(arguments: ["attachment", "inline", "", "attachment; filename=\"..\"", "attachment; filename=",
                      "attachment; name=x", "Content-Disposition: attachment"])
    func noUsableName(_ header: String) {
        #expect(FileName.fromContentDisposition(header) == nil)
    }

    @Test("invisible format characters (Cf) are refused in out= names and replaced in derived names",
          arguments: ["\u{202E}", "\u{200E}", "\u{200F}", "\u{202A}", "\u{2066}", "\u{2069}", "\u{FEFF}", "\u{200B}"])
    func invisibleFormatCharacters(_ format: String) {
        #expect(FileName.validate("report" + format + "fdp.exe")?.contains("invisible") == true)
        #expect(FileName.sanitise("report" + format + "fdp.exe") == "report_fdp.exe")
        let encoded = format.utf8.map { "%" + String($0, radix: 16, uppercase: true) }.joined()
        #expect(FileName.fromURL("http://h/report\(encoded)fdp.exe") == "report_fdp.exe")
        #expect(FileName.fromContentDisposition("attachment; filename*=UTF-8''report\(encoded)fdp.exe") == "report_fdp.exe")
    }
}
