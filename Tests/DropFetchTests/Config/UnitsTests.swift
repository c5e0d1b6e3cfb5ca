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
