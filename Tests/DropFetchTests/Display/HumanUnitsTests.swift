import Testing
@testable import DropFetch

@Suite struct HumanUnitsTests {
    @Test(arguments: [
        (Int64(0), "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (1_048_575, "1.0 MiB"),
        (10_800_333, "10.3 MiB"), (2_147_483_648, "2.00 GiB"), (6_114_656_256, "5.69 GiB"),
        (1 << 40, "1.00 TiB"), (-5, "0 B"),
    ] as [(Int64, String)])
    func bytes(count: Int64, expected: String) {
        #expect(HumanUnits.bytes(count) == expected)
    }

    @Test func rates() {
        #expect(HumanUnits.rate(850) == "850 B/s")
        #expect(HumanUnits.rate(204_800) == "200.0 KiB/s")
        #expect(HumanUnits.compactRate(4_718_592) == "4.5MiB/s")
    }

    @Test(arguments: [
        (Int64(0), "0s"), (45, "45s"), (60, "1m00s"), (185, "3m05s"), (3600, "1h00m"), (3720, "1h02m"),
        (86_400 + 3 * 3600 + 59, "1d03h"), (-3, "0s"),
    ] as [(Int64, String)])
    func durations(seconds: Int64, expected: String) {
        #expect(HumanUnits.duration(seconds: seconds) == expected)
    }

    @Test func etaAndPercent() {
        #expect(HumanUnits.eta(bytes: 0, size: 1000, bytesPerSecond: 100) == 10)
        #expect(HumanUnits.eta(bytes: 950, size: 1000, bytesPerSecond: 100) == 1)
        #expect(HumanUnits.eta(bytes: 1000, size: 1000, bytesPerSecond: 100) == 0)
        #expect(HumanUnits.eta(bytes: 0, size: nil, bytesPerSecond: 100) == nil)
        #expect(HumanUnits.eta(bytes: 0, size: 1000, bytesPerSecond: 0) == nil)
        #expect(HumanUnits.eta(bytes: 0, size: 1000, bytesPerSecond: nil) == nil)
        #expect(HumanUnits.percent(bytes: 999, size: 1000) == 99)
        #expect(HumanUnits.percent(bytes: 1000, size: 1000) == 100)
        #expect(HumanUnits.percent(bytes: 5, size: nil) == nil)
        #expect(HumanUnits.percent(bytes: 0, size: 0) == 100)
    }

    @Test func seconds() {
        #expect(HumanUnits.seconds(0.0124) == "0.012s")
        #expect(HumanUnits.seconds(188.4) == "188.400s")
        #expect(HumanUnits.fixed(0.05, digits: 1) == "0.1")
        #expect(HumanUnits.fixed(2, digits: 0) == "2")
    }
}
