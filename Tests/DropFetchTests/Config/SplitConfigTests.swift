import Testing
@testable import DropFetch

/// docs/config.md "Split" and docs/job-files.md: `split` at the top level and per class, the job
/// file's `split=`, `max-connection-per-server=` and `min-split-size=`, capped by the config.
@Suite("Split settings")
struct SplitConfigTests {
    private func configError(_ text: String) -> String? {
        do {
            _ = try ConfigLoader.parse(text, file: "t.yaml")
            return nil
        } catch {
            return error.description
        }
    }

    private func download(_ options: String) throws -> DownloadSpec {
        try #require(JobFileParser.parse(Array("https://a.example/f.iso\n\(options)".utf8)).downloads.first)
    }

    @Test("by default a download uses one connection and min_size is 20 MiB")
    func defaults() throws {
        let config = try ConfigLoader.parse("", file: "t.yaml")
        #expect(config.split == Config.Split(connections: 1, minSize: 20 << 20))
        #expect(config.split.applied(to: try download("  split=8\n")).connections == 1)
    }

    @Test("a class's split keeps the top level's keys it leaves out; a class without split takes the top level's")
    func classInherits() throws {
        let config = try ConfigLoader.parse("""
            classes:
              - { name: iso, split: { connections: 8 } }
              - { name: small }
            split: { connections: 4, min_size: 2MB }

            """, file: "t.yaml")
        #expect(config.split == Config.Split(connections: 4, minSize: 2 << 20))
        #expect(config.split(forClass: "iso") == Config.Split(connections: 8, minSize: 2 << 20))
        #expect(config.split(forClass: "small") == config.split)
        #expect(config.split(forClass: nil) == config.split)
    }

    @Test("bad split values are errors at their file, line, column and key", arguments: [
        ("split: { connections: 0 }\n", "t.yaml:1:23: split.connections: must be at least 1, got 0"),
        ("split: { connections: 17 }\n", "t.yaml:1:23: split.connections: must be at most 16, got 17"),
        ("split:\n  min_size: 1000KB\n", "t.yaml:2:13: split.min_size: must be at least 1048576 bytes, got 1000KB"),
        ("split: { parts: 2 }\n",
         "t.yaml:1:10: split.parts: unknown key 'parts'; expected one of connections, min_size"),
        ("classes:\n  - name: a\n    split: { connections: two }\n",
         "t.yaml:3:27: classes[0].split.connections: expected an integer, got 'two'"),
    ])
    func badValues(_ text: String, _ message: String) {
        #expect(configError(text) == message)
    }

    @Test("the job file asks for connections and a piece size; the config caps them")
    func jobFileCappedByConfig() throws {
        let split = Config.Split(connections: 4, minSize: 4 << 20)
        #expect(split.applied(to: try download("  split=8\n")) == Config.Split(connections: 4, minSize: 4 << 20))
        #expect(split.applied(to: try download("  split=2\n")).connections == 2)
        #expect(split.applied(to: try download("  split=8\n  max-connection-per-server=3\n")).connections == 3)
        #expect(split.applied(to: try download("  max-connection-per-server=1\n")).connections == 1)
        #expect(split.applied(to: try download("  min-split-size=1M\n")).minSize == 4 << 20)
        #expect(split.applied(to: try download("  min-split-size=64M\n")).minSize == 64 << 20)
        #expect(split.applied(to: try download("  out=f.iso\n")) == split)
    }

    @Test("split options are checked and kept, and have an effect: ignored_options does not name them")
    func checkedAndKept() throws {
        let job = try JobFileParser.parse(Array("https://a/f\n  split=4\n  max-connection-per-server=2\n  min-split-size=10M\n".utf8))
        #expect(job.ignoredOptions.isEmpty)
        #expect(job.downloads[0].split == 4)
        #expect(job.downloads[0].maxConnectionsPerServer == 2)
        #expect(job.downloads[0].minSplitSize == 10 << 20)
    }

    @Test("bad split options are invalid_job naming the line", arguments: [
        ("  split=0\n", "line 2: invalid split '0': expected a number of connections from 1 to 16"),
        ("  split=17\n", "line 2: invalid split '17': expected a number of connections from 1 to 16"),
        ("  max-connection-per-server=x\n",
         "line 2: invalid max-connection-per-server 'x': expected a number of connections from 1 to 16"),
        ("  min-split-size=512K\n", "line 2: min-split-size 524288 is below 1M, the least aria2 accepts"),
        ("  min-split-size=2X\n", "line 2: invalid min-split-size '2X': expected bytes, such as 1M or 20M"),
        ("  split=2\n  split=3\n", nil),
    ] as [(String, String?)])
    func badJobOptions(_ options: String, _ message: String?) {
        do {
            _ = try JobFileParser.parse(Array("https://a/f\n\(options)".utf8))
            Issue.record("accepted \(options)")
        } catch {
            if let message { #expect(error.description == message) } else { #expect(error.line == 3) }
        }
    }
}
