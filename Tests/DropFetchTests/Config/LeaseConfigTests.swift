@testable import DropFetch
import Foundation
import Testing

/// `lease:` (DESIGN.md §10 "Fencing"): a duration of at least 1 s, 10 s when absent; a bad value
/// is a config error at its file, line and column.
@Suite("lease: in the config")
struct LeaseConfigTests {
    @Test("lease is 10 s by default and takes a duration of 1 s or more")
    func parses() throws {
        #expect(Config().lease == .seconds(10))
        #expect(try ConfigLoader.parse("spool: /s\n", file: "test.yaml").lease == .seconds(10))
        #expect(try ConfigLoader.parse("spool: /s\nlease: 5s\n", file: "test.yaml").lease == .seconds(5))
        #expect(try ConfigLoader.parse("lease: 1s\n", file: "test.yaml").lease == .seconds(1))
        #expect(try ConfigLoader.parse("lease: 1500ms\n", file: "test.yaml").lease == .milliseconds(1_500))
        #expect(try ConfigLoader.parse("lease: 2m\n", file: "test.yaml").lease == .seconds(120))
    }

    @Test("a lease below 1 s, or not a duration, is an error at its line and column", arguments: [
        ("spool: /s\nlease: 0s\n", "must be at least 1s, got 0s"),
        ("spool: /s\nlease: 500ms\n", "must be at least 1s, got 500ms"),
        ("spool: /s\nlease: soon\n", "expected a duration like 30s, got 'soon'"),
        ("spool: /s\nlease: 10\n", "expected a duration like 30s, got '10'"),
        ("spool: /s\nlease: -5s\n", "expected a duration like 30s, got '-5s'"),
    ])
    func refused(_ yaml: String, _ message: String) throws {
        let error = try #require(throws: ConfigError.self) { try ConfigLoader.parse(yaml, file: "test.yaml") }
        #expect(error.file == "test.yaml")
        #expect(error.line == 2)
        #expect(error.column == 8)
        #expect(error.keyPath == "lease")
        #expect(error.message == message)
        #expect(error.description == "test.yaml:2:8: lease: \(message)")
    }

}
