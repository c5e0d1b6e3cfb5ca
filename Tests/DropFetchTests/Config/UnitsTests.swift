import Testing
@testable import DropFetch

@Suite struct UnitsTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("10m", .seconds(600)),
        ("2h", .seconds(7200)), ("1d", .seconds(86_400)), ("1h30m", .seconds(5400)),
        ("1m30s250ms", .milliseconds(90_250)), ("0", .zero), ("0s", .zero), ("007s", .seconds(7)),
    ])
    func durationParses(text: String, expected: Duration) {
        #expect(Units.duration(text) == expected)
    }

    @Test(arguments: [
        "", "abc", "30", "5", "-5s", "+5s", "1.5h", "30 s", " 30s", "s", "30S", "30sec", "30m1h", "1h1h",
        "9999999999999999999s", "106751991168d", "0x10s",
    ])
    func durationRefuses(text: String) {
        #expect(Units.duration(text) == nil)
    }

    @Test(arguments: [
        ("64KB", Int64(65_536)), ("10MB", 10_485_760), ("2GB", 2_147_483_648), ("1KB", 1024), ("1TB", 1 << 40),
        ("0", 0), ("123", 123), ("7B", 7), ("500K", 512_000), ("2M", 2_097_152), ("1G", 1 << 30),
        ("3kb", 3072), ("1KiB", 1024), ("4mib", 4 << 20),
    ])
    func sizeParses(text: String, expected: Int64) {
        #expect(Units.size(text) == expected)
    }

    @Test(arguments: [
        "", "KB", "-1", "+5", "1.5MB", "10 MB", " 10MB", "5X", "5KBB", "9999999TB", "99999999999999999999",
    ])
    func sizeRefuses(text: String) {
        #expect(Units.size(text) == nil)
    }

    @Test(arguments: [
        (Duration.seconds(5400), "1h30m"), (.milliseconds(1500), "1s500ms"), (.zero, "0"),
        (.seconds(86_400 + 1), "1d1s"), (.seconds(1800), "30m"),
    ])
    func durationFormats(duration: Duration, expected: String) {
        #expect(Units.format(duration) == expected)
        #expect(Units.duration(expected) == duration)
    }
}

@Suite struct UnitsRangeTests {
    @Test(arguments: [
        ("36525d", Units.maxDuration), ("3155760000000ms", Units.maxDuration),
        ("36524d23h59m59s999ms", Units.maxDuration - .milliseconds(1)),
    ])
    func longestDurations(text: String, expected: Duration) throws {
        #expect(try Units.checkedDuration(text) == expected)
    }

    @Test(arguments: [
        "36525d1ms", "3155760000001ms", "36526d", "9223372036854775807ms", "9223372036854775808ms",
        "106751991168d", "99999999999999999999999s", "36525d99999999999999999999ms",
    ])
    func durationsOutOfRange(text: String) {
        #expect(throws: Units.Problem.outOfRange) { try Units.checkedDuration(text) }
    }

    @Test(arguments: ["99999999999999999999s5x", "99999999999999999999", "36526d1h1h", "1d-1s"])
    func malformedDurationsStayMalformed(text: String) {
        #expect(throws: Units.Problem.malformed) { try Units.checkedDuration(text) }
    }

    @Test(arguments: ["4611686018427387904", "4194304TB", "4294967296G", "4503599627370496KB"])
    func largestSizes(text: String) throws {
        #expect(try Units.checkedSize(text) == 1 << 62)
    }

    @Test(arguments: ["4611686018427387905", "4194305TB", "9223372036854775807", "9223372036854775808",
                      "99999999999999999999B", "8388608TB"])
    func sizesOutOfRange(text: String) {
        #expect(throws: Units.Problem.outOfRange) { try Units.checkedSize(text) }
    }

    @Test(arguments: ["99999999999999999999XB", "-9223372036854775808", "1.5"])
    func malformedSizesStayMalformed(text: String) {
        #expect(throws: Units.Problem.malformed) { try Units.checkedSize(text) }
    }

    @Test func formatNeverOverflows() {
        #expect(Units.format(.seconds(Int64.max)).hasSuffix("ms"))
        #expect(Units.format(.seconds(-5)) == "0")
        #expect(Units.format(Units.maxDuration) == "36525d")
    }
}
