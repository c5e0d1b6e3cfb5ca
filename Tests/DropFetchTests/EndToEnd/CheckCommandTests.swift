import Foundation
import Glibc
import Testing

/// `dropfetch check` tries what `run` would need: folders it must create or write, the metrics
/// folder, the hook programs. A problem exits 2 and names its path; nothing is ever created.
@Suite("dropfetch check, end to end")
struct CheckCommandTests {
    /// A folder holding one config file (`config.yaml`), whose spool and destination may not exist.
    private final class Setup: @unchecked Sendable {
        let root: String
        var config: String { root + "/config.yaml" }

        init(_ yaml: (String) -> String) throws {
            root = FileManager.default.temporaryDirectory.path + "/dropfetch-check-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: root + "/cwd", withIntermediateDirectories: true)
            try yaml(root).write(toFile: config, atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        func check(environment: [String: String?] = [:]) throws -> CommandRun {
            try CommandRun(["check", "--config", config], in: root + "/cwd", environment: environment)
        }

        /// Everything under the root but the config and the empty working folder: what check created.
        func created() -> [String] {
            let all = (FileManager.default.subpaths(atPath: root) ?? []).sorted()
            return all.filter { $0 != "config.yaml" && $0 != "cwd" && !$0.hasPrefix("tools") }
        }
    }

    @Test("a spool, destination and class destination that are missing but can be made pass, and are not made")
    func creatableIsFine() throws {
        let setup = try Setup { root in
            """
            spool: \(root)/var/spool
            destination: \(root)/srv/downloads
            classes:
              - { name: iso, match: { url: "*.iso" }, destination: \(root)/srv/isos/deep/er }

            """
        }
        let result = try setup.check()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("config OK"))
        #expect(setup.created().isEmpty)
    }

    @Test("every error of the config is reported, in file order, as a compiler does: exit 2")
    func everyError() throws {
        let setup = try Setup { root in
            "spool: \(root)/spool\norder: sideways\nzz_unknown: 1\nconcurrency: { total: many }\nlog_level: loud\n"
        }
        let result = try setup.check()
        #expect(result.status == 2)
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("dropfetch: ") }
        #expect(lines.count == 4, "\(result.stderr)")
        let order = ["config.yaml:2:", "config.yaml:3:", "config.yaml:4:", "config.yaml:5:"]
        for (line, place) in zip(lines, order) { #expect(line.contains(place), "\(line)") }
        #expect(result.stderr.contains("unknown key 'zz_unknown'"))
    }

    @Test("split.connections above concurrency.per_host: a warning naming both, exit 0")
    func splitWiderThanPerHost() throws {
        let setup = try Setup { root in "spool: \(root)/spool\nsplit: { connections: 8 }\n" }
        let result = try setup.check()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning: split.connections 8 exceeds concurrency.per_host 2"), "\(result.stderr)")
        #expect(result.stdout.contains("config OK"))
        let quiet = try Setup { root in "spool: \(root)/spool\nsplit: { connections: 2 }\n" }.check()
        #expect(quiet.status == 0 && !quiet.stderr.contains("warning"), "\(quiet.stderr)")
    }

    @Test("a destination that cannot be created (/proc/nope): exit 2 naming it, as run would fail")
    func destinationOnProc() throws {
        let setup = try Setup { root in "spool: \(root)/spool\ndestination: /proc/nope\n" }
        let result = try setup.check()
        #expect(result.status == 2)
        #expect(result.stderr.contains("destination /proc/nope"), "\(result.stderr)")
        #expect(setup.created().isEmpty)
    }

    @Test("a class destination below a regular file: exit 2 naming the class and the path")
    func classDestinationBelowAFile() throws {
        let setup = try Setup { root in
            """
            spool: \(root)/spool
            classes:
              - { name: iso, match: { url: "*.iso" }, destination: \(root)/plain-file/isos }

            """
        }
        try "x".write(toFile: setup.root + "/plain-file", atomically: true, encoding: .utf8)
        let result = try setup.check()
        #expect(result.status == 2)
        #expect(result.stderr.contains("class iso destination \(setup.root)/plain-file/isos"), "\(result.stderr)")
        #expect(result.stderr.contains("\(setup.root)/plain-file is not a folder"), "\(result.stderr)")
    }

    @Test("a spool on a pseudo filesystem (/sys): exit 2 naming it")
    func spoolOnSys() throws {
        let setup = try Setup { _ in "spool: /sys/dropfetch-spool\n" }
        let result = try setup.check()
        #expect(result.status == 2)
        #expect(result.stderr.contains("spool /sys/dropfetch-spool"), "\(result.stderr)")
    }

    @Test("a metrics_file whose folder does not exist, or cannot hold files: exit 2 naming it",
          arguments: ["missing/deeper/dropfetch.prom", "/proc/dropfetch.prom"])
    func metricsFolder(metrics: String) throws {
        let setup = try Setup { root in
            "spool: \(root)/spool\nmetrics_file: \(metrics.hasPrefix("/") ? metrics : root + "/" + metrics)\n"
        }
        let path = metrics.hasPrefix("/") ? metrics : setup.root + "/" + metrics
        let result = try setup.check()
        #expect(result.status == 2)
        #expect(result.stderr.contains("metrics_file \(path)"), "\(result.stderr)")
        #expect(setup.created().isEmpty)
    }

    @Test("a metrics_file in an existing writable folder passes")
    func metricsFolderFine() throws {
        let setup = try Setup { root in "spool: \(root)/spool\nmetrics_file: \(root)/dropfetch.prom\n" }
        let result = try setup.check()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(setup.created().isEmpty)
    }

    @Test("a hook program that is missing, not executable, or not on PATH: exit 2 naming each")
    func hookPrograms() throws {
        let setup = try Setup { root in
            """
            spool: \(root)/spool
            hooks:
              on_done: [\(root)/tools/missing-hook, done]
              on_failed: [\(root)/tools/plain-text, failed]
              on_idle: [dropfetch-no-such-hook-program]

            """
        }
        try FileManager.default.createDirectory(atPath: setup.root + "/tools", withIntermediateDirectories: true)
        try "#!/bin/sh\n".write(toFile: setup.root + "/tools/plain-text", atomically: true, encoding: .utf8)
        chmod(setup.root + "/tools/plain-text", 0o644)
        let result = try setup.check()
        #expect(result.status == 2)
        #expect(result.stderr.contains("hooks.on_done \(setup.root)/tools/missing-hook"), "\(result.stderr)")
        #expect(result.stderr.contains("hooks.on_failed \(setup.root)/tools/plain-text"), "\(result.stderr)")
        #expect(result.stderr.contains("not executable"), "\(result.stderr)")
        #expect(result.stderr.contains("hooks.on_idle dropfetch-no-such-hook-program"), "\(result.stderr)")
    }

    @Test("hook programs found as posix_spawnp would: an executable path, or a name on PATH")
    func hookProgramsFine() throws {
        let setup = try Setup { root in
            """
            spool: \(root)/spool
            hooks: { on_done: [\(root)/tools/notify, done], on_failed: [notify-on-path], on_idle: [true] }

            """
        }
        try FileManager.default.createDirectory(atPath: setup.root + "/tools", withIntermediateDirectories: true)
        for name in ["notify", "notify-on-path"] {
            try "#!/bin/sh\n".write(toFile: setup.root + "/tools/" + name, atomically: true, encoding: .utf8)
            chmod(setup.root + "/tools/" + name, 0o755)
        }
        let result = try setup.check(environment: ["PATH": "/usr/bin:/bin:" + setup.root + "/tools"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
