import Testing
@testable import DropFetch

/// docs/config.md: a duration beyond 100 years, a size beyond 2^62 or an integer beyond Int64 is an
/// error naming the file, line, column and key path — each boundary tried just inside and just outside.
@Suite("Config number ranges")
struct ConfigRangeTests {
    static let durationMessage = "out of range: a duration must be at most 100 years (36525d), got "
    static let sizeMessage = "out of range: a size must be at most 2^62 bytes (4611686018427387904), got "
    static let integerMessage = "out of range: an integer must fit in 64 bits"
        + " (-9223372036854775808...9223372036854775807), got "

    @Test("durations up to 100 years are accepted")
    func longestDurations() throws {
        let config = try ConfigLoader.parse("""
            once_wait: 36525d
            scan_interval: 3155760000000ms
            retry: { initial_delay: 36524d23h59m59s999ms, max_delay: 36525d }
            limits: { timeout: 36525d }

            """, file: "t.yaml")
        #expect(config.onceWait == Units.maxDuration)
        #expect(config.scanInterval == Units.maxDuration)
        #expect(config.retry.initialDelay == Units.maxDuration - .milliseconds(1))
        #expect(config.retry.maxDelay == Units.maxDuration)
        #expect(config.limits.timeout == .seconds(36_525 * 86_400))
    }

    @Test("durations beyond 100 years, near 2^63 ms or beyond Int64 are errors at their key", arguments: [
        ("once_wait: 36525d1ms\n", 1, 12, "once_wait", "36525d1ms"),
        ("spool: /s\nscan_interval: 3155760000001ms\n", 2, 16, "scan_interval", "3155760000001ms"),
        ("once_wait: 9223372036854775807ms\n", 1, 12, "once_wait", "9223372036854775807ms"),
        ("scan_interval: 9223372036854775s\n", 1, 16, "scan_interval", "9223372036854775s"),
        ("once_wait: 9223372036854775808ms\n", 1, 12, "once_wait", "9223372036854775808ms"),
        ("once_wait: 106751991168d\n", 1, 12, "once_wait", "106751991168d"),
        ("retry:\n  max_delay: 200000d\n", 2, 14, "retry.max_delay", "200000d"),
        ("limits: { low_speed: { for: 99999999999999999999s } }\n", 1, 29, "limits.low_speed.for",
         "99999999999999999999s"),
    ])
    func durationOutOfRange(yaml: String, line: Int, column: Int, keyPath: String, value: String) throws {
        let error = try #require(throws: ConfigError.self) { try ConfigLoader.parse(yaml, file: "t.yaml") }
        #expect(error == ConfigError(file: "t.yaml", line: line, column: column, keyPath: keyPath,
                                     message: Self.durationMessage + value))
    }

    @Test("a malformed duration is still reported as malformed, not out of range")
    func malformedBeatsOutOfRange() throws {
        let error = try #require(throws: ConfigError.self) {
            try ConfigLoader.parse("once_wait: 99999999999999999999s5x\n", file: "t.yaml")
        }
        #expect(error.message == "expected a duration like 30s, got '99999999999999999999s5x'")
    }

    @Test("sizes up to 2^62 are accepted", arguments: [
        "limits: { max_job_file_size: 4611686018427387904 }\n",
        "limits: { max_job_file_size: 4194304TB }\n",
        "limits: { max_job_file_size: 4294967296G }\n",
    ])
    func largestSizes(yaml: String) throws {
        #expect(try ConfigLoader.parse(yaml, file: "t.yaml").limits.maxJobFileSize == 1 << 62)
    }

    @Test("sizes beyond 2^62 or beyond Int64 are errors at their key", arguments: [
        ("limits: { max_job_file_size: 9223372036854775807 }\n", 1, 30, "limits.max_job_file_size",
         "9223372036854775807"),
        ("limits:\n  max_job_file_size: 4611686018427387905\n", 2, 22, "limits.max_job_file_size",
         "4611686018427387905"),
        ("limits:\n  max_file_size: 4194305TB\n", 2, 18, "limits.max_file_size", "4194305TB"),
        ("limits:\n  rate_limit: 99999999999999999999\n", 2, 15, "limits.rate_limit", "99999999999999999999"),
        ("limits:\n  min_free_space: 8388608TB\n", 2, 19, "limits.min_free_space", "8388608TB"),
        ("classes:\n  - name: a\n    rate_limit: 4611686018427387905B\n", 3, 17, "classes[0].rate_limit",
         "4611686018427387905B"),
    ])
    func sizeOutOfRange(yaml: String, line: Int, column: Int, keyPath: String, value: String) throws {
        let error = try #require(throws: ConfigError.self) { try ConfigLoader.parse(yaml, file: "t.yaml") }
        #expect(error == ConfigError(file: "t.yaml", line: line, column: column, keyPath: keyPath,
                                     message: Self.sizeMessage + value))
    }

    @Test("integers fill Int64 exactly")
    func integerBounds() throws {
        let config = try ConfigLoader.parse("""
            concurrency: { total: 9223372036854775807 }
            classes:
              - { name: low, priority: -9223372036854775808 }
              - { name: high, priority: 9223372036854775807 }

            """, file: "t.yaml")
        #expect(config.concurrency.total == Int.max)
        #expect(config.classes.map(\.priority) == [Int.min, Int.max])
    }

    @Test("integers beyond Int64 are errors at their key", arguments: [
        ("concurrency: { total: 9223372036854775808 }\n", 1, 23, "concurrency.total", "9223372036854775808"),
        ("classes:\n  - { name: a, priority: -9223372036854775809 }\n", 2, 26, "classes[0].priority",
         "-9223372036854775809"),
        ("max_redirects: 99999999999999999999999\n", 1, 16, "max_redirects", "99999999999999999999999"),
        ("retry: { on_http: [+99999999999999999999] }\n", 1, 20, "retry.on_http[0]", "+99999999999999999999"),
    ])
    func integerOutOfRange(yaml: String, line: Int, column: Int, keyPath: String, value: String) throws {
        let error = try #require(throws: ConfigError.self) { try ConfigLoader.parse(yaml, file: "t.yaml") }
        #expect(error == ConfigError(file: "t.yaml", line: line, column: column, keyPath: keyPath,
                                     message: Self.integerMessage + value))
        #expect(error.description.hasPrefix("t.yaml:\(line):\(column): \(keyPath): out of range"))
    }
}
