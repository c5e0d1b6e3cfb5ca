import Foundation
import Testing
@testable import DropFetch

/// Parses `yaml` and returns the error it must produce.
private func parseError(_ yaml: String, sourceLocation: SourceLocation = #_sourceLocation) -> ConfigError? {
    do {
        let config = try ConfigLoader.parse(yaml, file: "test.yaml")
        Issue.record("expected an error, got \(config)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// A temporary folder removed when the value goes away.
private final class TemporaryFolder {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "dropfetch-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let file = "\(path)/\(name)"
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }
}

/// An invalid config and the error it must give.
struct ConfigErrorCase: Sendable, CustomTestStringConvertible {
    var yaml: String
    var line: Int
    var column: Int
    var keyPath: String
    var message: String

    var testDescription: String { "\(keyPath.isEmpty ? "(root)" : keyPath): \(message)" }
}

@Suite struct ConfigLoaderTests {
    // MARK: Defaults

    @Test(arguments: ["", "\n\n", "# only a comment\n", "# one\n\n   # two\n", "---\n", "--- # empty\n...\n", "~\n"])
    func emptyDocumentGivesDefaults(yaml: String) throws {
        #expect(try ConfigLoader.parse(yaml, file: "test.yaml") == Config())
    }

    @Test func defaultsMatchDesign() {
        let config = Config()
        #expect(config.spool == "./spool")
        #expect(config.concurrency.total == 4 && config.concurrency.perHost == 2)
        #expect(config.retry.initialDelay == .seconds(10) && config.retry.maxDelay == .seconds(1800))
        #expect(config.limits.maxFileSize == 50 << 30 && config.limits.maxJobFileSize == 64 << 10)
        #expect(config.protocols == ["http", "https"])
        #expect(config.scanInterval == .seconds(30) && config.onceWait == .seconds(60))
    }

    @Test func partialSectionsKeepOtherDefaults() throws {
        let config = try ConfigLoader.parse("concurrency:\n  per_host: 1\nlimits:\n  low_speed: { for: 2m }\n", file: "t")
        var expected = Config()
        expected.concurrency.perHost = 1
        expected.limits.lowSpeed.duration = .seconds(120)
        #expect(config == expected)
    }

    @Test func nullValuesKeepDefaults() throws {
        let yaml = "destination:\nagent_id: ~\nmetrics_file: null\nhooks:\n  on_done:\nclasses:\nconcurrency:\n"
        #expect(try ConfigLoader.parse(yaml, file: "t") == Config())
    }

    // MARK: Every key

    @Test func fullBlockConfig() throws {
        let yaml = """
            spool: /var/spool/dropfetch
            destination: /srv/downloads
            agent_id: host-a
            concurrency:
              total: 8
              per_host: 1
            order: lifo
            once_wait: 90s
            retry:
              attempts: 3
              initial_delay: 500ms
              max_delay: 1h30m
              on_http: [429, 503]
            limits:
              max_file_size: 2GB
              max_job_file_size: 16KB
              connect_timeout: 5s
              low_speed:
                bytes_per_second: 10KB
                for: 2m
              rate_limit: 10MB
            protocols: [https, sftp, ftp, ftps, http]
            on_conflict: fail
            content_disposition: true
            scan_interval: 0
            fsync: false
            digest: none
            classes:
              - name: urgent
                match: { folder: urgent }
                priority: 100
              - name: iso
                match:
                  url: "*.iso"
                  host: "*.example.org"
                priority: -10
                max_active: 1
                destination: /srv/isos
                rate_limit: 5MB
                retry:
                  attempts: 7
                  on_http: []
            hooks:
              on_done: [/usr/local/bin/notify, done]
              on_failed:
                - /usr/local/bin/notify
                - failed
              on_idle: ["/usr/local/bin/notify", 'idle']
            metrics_file: /var/lib/prometheus/node-exporter/dropfetch.prom
            log_level: debug

            """
        var expected = Config()
        expected.spool = "/var/spool/dropfetch"
        expected.destination = "/srv/downloads"
        expected.agentID = "host-a"
        expected.concurrency.total = 8
        expected.concurrency.perHost = 1
        expected.order = .lifo
        expected.onceWait = .seconds(90)
        expected.retry.attempts = 3
        expected.retry.initialDelay = .milliseconds(500)
        expected.retry.maxDelay = .seconds(5400)
        expected.retry.onHTTP = [429, 503]
        expected.limits.maxFileSize = 2 << 30
        expected.limits.maxJobFileSize = 16 << 10
        expected.limits.connectTimeout = .seconds(5)
        expected.limits.lowSpeed.bytesPerSecond = 10 << 10
        expected.limits.lowSpeed.duration = .seconds(120)
        expected.limits.rateLimit = 10 << 20
        expected.protocols = ["https", "sftp", "ftp", "ftps", "http"]
        expected.onConflict = .fail
        expected.contentDisposition = true
        expected.scanInterval = .zero
        expected.fsync = false
        expected.digest = .none
        var urgent = Config.JobClass(name: "urgent")
        urgent.match = Config.ClassMatch(folder: "urgent")
        urgent.priority = 100
        var iso = Config.JobClass(name: "iso")
        iso.match = Config.ClassMatch(url: "*.iso", host: "*.example.org")
        iso.priority = -10
        iso.maxActive = 1
        iso.destination = "/srv/isos"
        iso.rateLimit = 5 << 20
        var isoRetry = expected.retry  // inherits the top-level retry
        isoRetry.attempts = 7
        isoRetry.onHTTP = []
        iso.retry = isoRetry
        expected.classes = [urgent, iso]
        expected.hooks.onDone = ["/usr/local/bin/notify", "done"]
        expected.hooks.onFailed = ["/usr/local/bin/notify", "failed"]
        expected.hooks.onIdle = ["/usr/local/bin/notify", "idle"]
        expected.metricsFile = "/var/lib/prometheus/node-exporter/dropfetch.prom"
        expected.logLevel = .debug
        #expect(try ConfigLoader.parse(yaml, file: "full.yaml") == expected)
    }

    @Test func flowStyleConfig() throws {
        let yaml = """
            {spool: /s, concurrency: {total: 2, per_host: 1}, protocols: [https],
             retry: {attempts: 2, initial_delay: 1s, max_delay: 1s, on_http: [503]},
             classes: [{name: a, match: {host: "*.x.org"}, priority: 5, retry: {attempts: 9}}],
             hooks: {on_idle: [/bin/true]}, limits: {low_speed: {bytes_per_second: 0, for: 1s}}}
            """
        let config = try ConfigLoader.parse(yaml, file: "flow.yaml")
        #expect(config.spool == "/s")
        #expect(config.concurrency.total == 2 && config.concurrency.perHost == 1)
        #expect(config.protocols == ["https"])
        #expect(config.retry.attempts == 2 && config.retry.onHTTP == [503])
        #expect(config.classes.map(\.name) == ["a"])
        #expect(config.classes.first?.match == Config.ClassMatch(host: "*.x.org"))
        #expect(config.classes.first?.retry?.attempts == 9)
        #expect(config.classes.first?.retry?.maxDelay == .seconds(1))
        #expect(config.hooks.onIdle == ["/bin/true"])
        #expect(config.limits.lowSpeed.bytesPerSecond == 0 && config.limits.lowSpeed.duration == .seconds(1))
    }

    @Test(arguments: [("", Config.DigestChoice.sha256), ("digest: sha256\n", .sha256), ("digest: none\n", .none),
                      ("digest: \"none\"\n", .none)])
    func digestChoice(yaml: String, expected: Config.DigestChoice) throws {
        #expect(try ConfigLoader.parse(yaml, file: "t").digest == expected)
    }

    @Test func classRetryInheritsTopLevelRetryWrittenLater() throws {
        let yaml = "classes:\n  - name: a\n    retry: { attempts: 2 }\nretry: { initial_delay: 1m, on_http: [500] }\n"
        let retry = try #require(try ConfigLoader.parse(yaml, file: "t").classes.first?.retry)
        #expect(retry.attempts == 2 && retry.initialDelay == .seconds(60) && retry.onHTTP == [500])
    }

    @Test func smallDetails() throws {
        let yaml = """
            agent_id: 42
            protocols: [HTTPS]
            classes:
              - { name: z, match: { folder: team/a/ }, rate_limit: 0 }

            """
        let config = try ConfigLoader.parse(yaml, file: "t")
        #expect(config.agentID == "42")
        #expect(config.protocols == ["https"])
        #expect(config.classes.first?.match.folder == "team/a")
        #expect(config.classes.first?.rateLimit == nil)
    }

    // MARK: Errors, each with its exact place

    static let errorCases: [ConfigErrorCase] = [
        // Unknown and duplicate keys.
        .init(yaml: "spool: /s\nspoool: /x\n", line: 2, column: 1, keyPath: "spoool",
              message: "unknown key 'spoool'; expected one of " + ConfigLoader.topLevelKeys.joined(separator: ", ")),
        .init(yaml: "limits:\n  low_speed:\n    bytes_per_second: 1KB\n    fro: 60s\n", line: 4, column: 5,
              keyPath: "limits.low_speed.fro", message: "unknown key 'fro'; expected one of bytes_per_second, for"),
        .init(yaml: "classes:\n  - name: a\n    prio: 1\n", line: 3, column: 5, keyPath: "classes[0].prio",
              message: "unknown key 'prio'; expected one of " + ConfigLoader.classKeys.joined(separator: ", ")),
        .init(yaml: "fsync: true\nfsync: false\n", line: 2, column: 1, keyPath: "fsync",
              message: "duplicate key 'fsync' (first at line 1, column 1)"),
        .init(yaml: "concurrency: {total: 4, total: 5}\n", line: 1, column: 25, keyPath: "concurrency.total",
              message: "duplicate key 'total' (first at line 1, column 15)"),
        // Wrong types.
        .init(yaml: "concurrency:\n  total: four\n", line: 2, column: 10, keyPath: "concurrency.total",
              message: "expected an integer, got 'four'"),
        .init(yaml: "concurrency: { per_host: \"2\" }\n", line: 1, column: 26, keyPath: "concurrency.per_host",
              message: "expected an integer, got \"2\" (quoted)"),
        .init(yaml: "fsync: yes\n", line: 1, column: 8, keyPath: "fsync", message: "expected true or false, got 'yes'"),
        .init(yaml: "order: random\n", line: 1, column: 8, keyPath: "order",
              message: "expected one of fifo, lifo; got 'random'"),
        .init(yaml: "log_level: verbose\n", line: 1, column: 12, keyPath: "log_level",
              message: "expected one of trace, debug, info, notice, warning, error, critical; got 'verbose'"),
        .init(yaml: "on_conflict: [rename]\n", line: 1, column: 14, keyPath: "on_conflict",
              message: "expected one of rename, overwrite, fail; got a list"),
        .init(yaml: "fsync: true\ndigest: md5\n", line: 2, column: 9, keyPath: "digest",
              message: "expected one of sha256, none; got 'md5'"),
        .init(yaml: "digest: SHA256\n", line: 1, column: 9, keyPath: "digest",
              message: "expected one of sha256, none; got 'SHA256'"),
        .init(yaml: "digest:\n", line: 1, column: 8, keyPath: "digest", message: "expected one of sha256, none; got nothing"),
        .init(yaml: "digest: [none]\n", line: 1, column: 9, keyPath: "digest",
              message: "expected one of sha256, none; got a list"),
        .init(yaml: "spool:\n  path: /x\n", line: 2, column: 3, keyPath: "spool", message: "expected a path, got a mapping"),
        .init(yaml: "spool:\nfsync: true\n", line: 1, column: 7, keyPath: "spool", message: "expected a path, got nothing"),
        .init(yaml: "concurrency: 4\n", line: 1, column: 14, keyPath: "concurrency",
              message: "expected a mapping of total, per_host, got '4'"),
        .init(yaml: "- spool\n", line: 1, column: 1, keyPath: "",
              message: "expected a mapping of settings at the top level, got a list"),
        .init(yaml: "agent_id: ../evil\n", line: 1, column: 11, keyPath: "agent_id",
              message: "expected a name usable as a folder (no '/', no leading '.', no control characters), got '../evil'"),
        // Ranges.
        .init(yaml: "concurrency:\n  total: 0\n", line: 2, column: 10, keyPath: "concurrency.total",
              message: "must be at least 1, got 0"),
        .init(yaml: "concurrency:\n  per_host: -1\n", line: 2, column: 13, keyPath: "concurrency.per_host",
              message: "must be at least 1, got -1"),
        .init(yaml: "retry: { attempts: 0 }\n", line: 1, column: 20, keyPath: "retry.attempts",
              message: "must be at least 1, got 0"),
        .init(yaml: "retry:\n  initial_delay: 1h\n  max_delay: 10m\n", line: 2, column: 18, keyPath: "retry.initial_delay",
              message: "initial_delay 1h is longer than max_delay 10m"),
        .init(yaml: "retry: { max_delay: 5s }\n", line: 1, column: 21, keyPath: "retry.max_delay",
              message: "initial_delay 10s is longer than max_delay 5s"),
        .init(yaml: "retry: { on_http: [503, 200] }\n", line: 1, column: 25, keyPath: "retry.on_http[1]",
              message: "expected an HTTP error status from 400 to 599, got 200"),
        .init(yaml: "retry: { on_http: [503, 503] }\n", line: 1, column: 25, keyPath: "retry.on_http[1]",
              message: "503 is listed twice"),
        .init(yaml: "limits:\n  max_file_size: 0\n", line: 2, column: 18, keyPath: "limits.max_file_size",
              message: "must be greater than 0, got 0"),
        .init(yaml: "limits:\n  connect_timeout: 0\n", line: 2, column: 20, keyPath: "limits.connect_timeout",
              message: "must be longer than 0, got 0"),
        .init(yaml: "limits:\n  low_speed: { for: 500ms }\n", line: 2, column: 21, keyPath: "limits.low_speed.for",
              message: "must be at least 1s, got 500ms"),
        // Durations and sizes.
        .init(yaml: "limits:\n  low_speed: { for: abc }\n", line: 2, column: 21, keyPath: "limits.low_speed.for",
              message: "expected a duration like 30s, got 'abc'"),
        .init(yaml: "scan_interval: 30\n", line: 1, column: 16, keyPath: "scan_interval",
              message: "expected a duration like 30s, got '30'"),
        .init(yaml: "limits:\n  max_file_size: 10 MB\n", line: 2, column: 18, keyPath: "limits.max_file_size",
              message: "expected a size like 10MB, got '10 MB'"),
        .init(yaml: "limits: { rate_limit: -5MB }\n", line: 1, column: 23, keyPath: "limits.rate_limit",
              message: "expected a size like 10MB, got '-5MB'"),
        // Protocols.
        .init(yaml: "protocols: [http, file]\n", line: 1, column: 19, keyPath: "protocols[1]",
              message: "'file' is never allowed: a job must not read local files"),
        .init(yaml: "protocols:\n  - https\n  - gopher\n", line: 3, column: 5, keyPath: "protocols[1]",
              message: "unknown protocol 'gopher'; expected some of http, https, ftp, ftps, sftp"),
        .init(yaml: "protocols: [https, http, https]\n", line: 1, column: 26, keyPath: "protocols[2]",
              message: "'https' is listed twice"),
        .init(yaml: "protocols: []\n", line: 1, column: 12, keyPath: "protocols",
              message: "list at least one protocol, such as [http, https]"),
        .init(yaml: "protocols: https\n", line: 1, column: 12, keyPath: "protocols", message: "expected a list, got 'https'"),
        // Classes.
        .init(yaml: "classes:\n  - name: a\n  - name: b\n  - name: a\n", line: 4, column: 11, keyPath: "classes[2].name",
              message: "class 'a' is already defined at line 2"),
        .init(yaml: "classes:\n  - priority: 5\n", line: 2, column: 5, keyPath: "classes[0]",
              message: "a class needs a name"),
        .init(yaml: "classes:\n  - name: two words\n", line: 2, column: 11, keyPath: "classes[0].name",
              message: "a class name cannot contain spaces or control characters"),
        .init(yaml: "classes:\n  - name: a\n    match: { url: [a, b] }\n", line: 3, column: 19,
              keyPath: "classes[0].match.url", message: "expected a string, got a list"),
        .init(yaml: "classes:\n  - name: a\n  - name: b\n    match: { url: }\n", line: 4, column: 19,
              keyPath: "classes[1].match.url", message: "expected a string, got nothing"),
        .init(yaml: "classes:\n  - name: a\n    match: { folder: /srv/x }\n", line: 3, column: 22,
              keyPath: "classes[0].match.folder",
              message: "expected a folder inside inbox/ like 'urgent', got the absolute path '/srv/x'"),
        .init(yaml: "classes:\n  - name: a\n    match: { folder: a/../b }\n", line: 3, column: 22,
              keyPath: "classes[0].match.folder", message: "expected a folder inside inbox/ like 'urgent', got 'a/../b'"),
        .init(yaml: "classes:\n  - name: a\n    max_active: 0\n", line: 3, column: 17, keyPath: "classes[0].max_active",
              message: "must be at least 1, got 0"),
        .init(yaml: "retry: { initial_delay: 1m }\nclasses:\n  - name: a\n    retry: { max_delay: 30s }\n",
              line: 4, column: 25, keyPath: "classes[0].retry.max_delay",
              message: "initial_delay 1m is longer than max_delay 30s"),
        .init(yaml: "classes: { name: a }\n", line: 1, column: 10, keyPath: "classes", message: "expected a list, got a mapping"),
        // Hooks.
        .init(yaml: "hooks:\n  on_done: []\n", line: 2, column: 12, keyPath: "hooks.on_done",
              message: "expected a command, got an empty list"),
        .init(yaml: "hooks:\n  on_failed: /bin/notify failed\n", line: 2, column: 14, keyPath: "hooks.on_failed",
              message: "expected a command as a list such as [/usr/local/bin/notify, done], got '/bin/notify failed'"),
        .init(yaml: "hooks:\n  on_idle: [/bin/echo, [x]]\n", line: 2, column: 24, keyPath: "hooks.on_idle[1]",
              message: "expected a string, got a list"),
        .init(yaml: "hooks:\n  on_exit: [/bin/true]\n", line: 2, column: 3, keyPath: "hooks.on_exit",
              message: "unknown key 'on_exit'; expected one of on_done, on_failed, on_idle"),
        // YAML itself, and what the loader refuses.
        .init(yaml: "spool: /s\nlimits: a: b\n", line: 2, column: 10, keyPath: "",
              message: "mapping values are not allowed in this context"),
        .init(yaml: "spool: \"/s\nfsync: true\n", line: 3, column: 1, keyPath: "",
              message: "while scanning a quoted scalar started at line 1, column 8: found unexpected end of stream"),
        .init(yaml: "concurrency:\n\ttotal: 4\n", line: 2, column: 1, keyPath: "",
              message: "while scanning for the next token started at line 2, column 1: found character that cannot start any token"),
        .init(yaml: "spool: /a\n---\nspool: /b\n", line: 2, column: 1, keyPath: "", message: "only one YAML document is allowed"),
        .init(yaml: "retry: &r { attempts: 3 }\n", line: 1, column: 8, keyPath: "retry",
              message: "anchors (&r) are not allowed in the config"),
        .init(yaml: "classes:\n  - name: a\n    retry: *r\n", line: 3, column: 12, keyPath: "classes[0].retry",
              message: "aliases (*r) are not allowed in the config"),
        .init(yaml: "spool: !!str /s\n", line: 1, column: 8, keyPath: "spool",
              message: "tags (tag:yaml.org,2002:str) are not allowed in the config"),
        .init(yaml: "? [a, b]\n: c\n", line: 1, column: 3, keyPath: "", message: "found a list as a key; keys must be names"),
        .init(yaml: "spool: /s\u{7}\n", line: 1, column: 10, keyPath: "", message: "control characters are not allowed"),
    ]

    @Test(arguments: errorCases)
    func errorIsLocated(_ errorCase: ConfigErrorCase) throws {
        let error = try #require(parseError(errorCase.yaml))
        #expect(error.file == "test.yaml")
        #expect(error.line == errorCase.line)
        #expect(error.column == errorCase.column)
        #expect(error.keyPath == errorCase.keyPath)
        #expect(error.message == errorCase.message)
    }

    @Test func errorDescriptionNamesFileLineColumnAndKey() throws {
        let error = try #require(parseError("concurrency:\n  total: 0\n"))
        #expect(error.description == "test.yaml:2:10: concurrency.total: must be at least 1, got 0")
    }

    @Test func aliasOfAnchoredValueIsRefusedAtTheAnchor() throws {
        // A "billion laughs" document never gets past its first anchor.
        let laughs = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b]\n"
        let error = try #require(parseError(laughs))
        #expect(error.line == 1 && error.column == 4)
        #expect(error.message.contains("anchors"))
    }

    // MARK: Hardening limits

    @Test func nestingDepthIsCappedAt32() throws {
        let deepest = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(throws: Never.self) { try YAMLDocument.parse(Array(deepest.utf8)) }

        let tooDeep = "spool: " + String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        let error = try #require(parseError(tooDeep))
        #expect(error.line == 1 && error.column == 8 + 31)
        #expect(error.message == "nesting is deeper than 32 levels")
    }

    @Test func sizeIsCappedAtOneMebibyte() throws {
        let line = "# " + String(repeating: "x", count: 1021) + "\n"  // 1024 bytes
        let largest = String(repeating: line, count: 1024)
        #expect(try ConfigLoader.parse(largest, file: "t") == Config())

        let error = try #require(parseError(largest + "\n"))
        #expect(error.line == nil && error.column == nil)
        #expect(error.message == "the config is larger than 1024 KiB")
    }

    // MARK: Files

    @Test func loadReadsAFile() throws {
        let folder = try TemporaryFolder()
        let path = try folder.write("dropfetch.yaml", Array("spool: /data/spool\nlog_level: warning\n".utf8))
        let config = try ConfigLoader.load(path: path)
        #expect(config.spool == "/data/spool" && config.logLevel == .warning)
    }

    @Test func loadOfMissingFileNamesThePath() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/missing.yaml"
        let error = try #require(throws: ConfigError.self) { try ConfigLoader.load(path: path) }
        #expect(error.file == path)
        #expect(error.line == nil && error.column == nil && error.keyPath.isEmpty)
        #expect(error.message == "cannot open the config file: No such file or directory")
    }

    @Test func loadRefusesAFileOverOneMebibyte() throws {
        let folder = try TemporaryFolder()
        let path = try folder.write("big.yaml", [UInt8](repeating: UInt8(ascii: "\n"), count: (1 << 20) + 1))
        let error = try #require(throws: ConfigError.self) { try ConfigLoader.load(path: path) }
        #expect(error.file == path && error.line == nil)
        #expect(error.message == "the config is larger than 1024 KiB")
    }

    @Test func loadLocatesInvalidUTF8() throws {
        let folder = try TemporaryFolder()
        let path = try folder.write("latin1.yaml", Array("spool: /s\nagent_id: caf".utf8) + [0xE9, 0x0A])
        let error = try #require(throws: ConfigError.self) { try ConfigLoader.load(path: path) }
        #expect(error.file == path)
        #expect(error.line == 2 && error.column == 14)
    }

    @Test func exampleConfigLoadsAndDocumentsEveryKey() throws {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // Config
            .deletingLastPathComponent()  // DropFetchTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()
        let path = root.appendingPathComponent("config.example.yaml").path
        let config = try ConfigLoader.load(path: path)

        let urgent = try #require(config.classes.first { $0.name == "urgent" })
        #expect(urgent.match.folder == "urgent" && urgent.priority > 0)
        let iso = try #require(config.classes.first { $0.name == "iso" })
        #expect(iso.maxActive == 1 && iso.destination != nil && iso.rateLimit != nil)
        #expect(config.concurrency.perHost <= 2)

        // Every top-level key and every class key appears in the example.
        let document = try #require(try YAMLDocument.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        guard case .mapping(let entries) = document.content else {
            Issue.record("the example is not a mapping")
            return
        }
        #expect(entries.map(\.key) == ConfigLoader.topLevelKeys)
        var classKeys: Set<String> = []
        if let classes = entries.first(where: { $0.key == "classes" }), case .sequence(let items) = classes.value.content {
            for case .mapping(let keys) in items.map(\.content) { classKeys.formUnion(keys.map(\.key)) }
        }
        #expect(classKeys == Set(ConfigLoader.classKeys))
    }
}
