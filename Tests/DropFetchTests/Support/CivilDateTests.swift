@testable import DropFetch
import Glibc
import Testing

/// Status files' UTC timestamps: the date computed from the day count is gmtime_r(3)'s.
@Suite("Timestamps: the civil date")
struct CivilDateTests {
    /// gmtime_r(3)'s fields for `seconds`, as `Timestamp.civil` gives them.
    private func glibc(_ seconds: Int64) -> [Int32] {
        var value = time_t(seconds)
        var parts = tm()
        gmtime_r(&value, &parts)
        return [parts.tm_year, parts.tm_mon, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec]
    }

    private func civil(_ seconds: Int64) -> [Int32]? {
        Timestamp.civil(seconds: seconds).map { [$0.tm_year, $0.tm_mon, $0.tm_mday, $0.tm_hour, $0.tm_min, $0.tm_sec] }
    }

    @Test("the civil date is gmtime_r's: leap days, century years, before the epoch, the ends of year 0 and 9999")
    func matchesGlibc() {
        let fixed: [Int64] = [
            0, -1, 59, 86_399, 86_400, 951_782_400, 951_868_799, 4_107_542_400, 4_107_628_799, 1_795_046_400,
            -2_208_988_800, -62_167_219_200, 253_402_300_799, 1_709_164_800, 1_709_251_199,
        ]
        for seconds in fixed { #expect(civil(seconds) == glibc(seconds), "\(seconds)") }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let seconds = Int64.random(in: -62_167_219_200..<253_402_300_800, using: &generator)
            #expect(civil(seconds) == glibc(seconds), "\(seconds)")
        }
        #expect(civil(-62_167_219_201) == nil && civil(253_402_300_800) == nil)
    }

    @Test("a time before the epoch counts its day back")
    func beforeEpoch() {
        #expect(Timestamp.format(seconds: -1) == "1969-12-31T23:59:59Z")
        #expect(Timestamp.parse("1969-12-31T23:59:59Z") == -1)
    }
}
