import Testing
@testable import DropFetch

@Suite struct LogfmtTests {
    @Test("values are bare when unambiguous, quoted when they hold a space, a quote, = or a control", arguments: [
        ("a.url", "a.url"), ("b job.url", #""b job.url""#), ("", #""""#), ("x=1", #""x=1""#),
        (#"say "hi""#, #""say \"hi\"""#), ("line\nFAKE level=error", #""line\nFAKE level=error""#),
        ("tab\there", #""tab\there""#), ("esc\u{1B}[31m", #""esc\u{1b}[31m""#), (#"C:\dir"#, #"C:\dir"#),
        (#"back\slash and space"#, #""back\\slash and space""#), ("nbsp\u{A0}x", "\"nbsp\u{A0}x\""),
        ("http://h/a?b=c", #""http://h/a?b=c""#), ("ünïcödé", "ünïcödé"),
    ])
    func quoting(text: String, expected: String) {
        #expect(Logfmt.value(text) == expected)
    }

    @Test("whatever the value, the pair parses back to it", arguments: [
        "plain", "two words", "\"quoted\"", "a=b=c", "\\\\", "new\nline", "\r\n", "\u{0}\u{7F}\u{9B}", "\u{2028}x", "",
        "J27-\u{1B}[31mred\nFAKE job done.url",
    ])
    func roundTrip(text: String) throws {
        let line = try LogfmtLine("msg=" + Logfmt.value(text) + " " + Logfmt.pair("k", text))
        #expect(line["msg"] == text)
        #expect(line["k"] == text)
        #expect(!Logfmt.value(text).contains("\n"))
    }

    @Test func keys() {
        #expect(Logfmt.key("job") == "job")
        #expect(Logfmt.key("retry_at") == "retry_at")
        #expect(Logfmt.key("a b=c\"") == "a_b_c_")
        #expect(Logfmt.key("") == "_")
    }

    @Test func journalMessagesKeepTheirWordsAndLoseTheirControls() {
        #expect(Logfmt.escapedControls("agent started") == "agent started")
        #expect(Logfmt.escapedControls("a\nb\u{1B}") == "a\\u{a}b\\u{1b}")
    }

    @Test("the test parser refuses what is not logfmt", arguments: [
        "2026-11-21T22:00:00Z info job done", "k=\"open", "k=a\"b", "=v", "k=\"x\"y", "k=\"\\q\"", "",
    ])
    func parserRefuses(line: String) {
        #expect(throws: LogfmtLine.Malformed.self) { try LogfmtLine(line) }
    }

    @Test("bidi, zero-width and BOM characters (Unicode Cf) are escaped, never written raw",
          arguments: ["\u{202E}", "\u{200E}", "\u{200F}", "\u{202A}", "\u{2066}", "\u{2069}", "\u{FEFF}", "\u{200B}"])
    func formatCharactersEscaped(_ format: String) throws {
        let value = Logfmt.value("invoice" + format + "fdp.exe")
        #expect(!value.unicodeScalars.contains { $0.properties.generalCategory == .format }, "\(value.debugDescription)")
        #expect(value.contains("\\u{\(String(format.unicodeScalars.first!.value, radix: 16))}"))
        #expect(!Logfmt.escapedControls("a" + format + "b").unicodeScalars.contains { $0.properties.generalCategory == .format })
        #expect(try LogfmtLine(Logfmt.pair("name", "a" + format + "b")).pairs.first?.value == "a" + format + "b")
    }
}
