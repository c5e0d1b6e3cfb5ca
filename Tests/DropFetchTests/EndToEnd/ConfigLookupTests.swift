import Foundation
import Glibc
import Testing

/// Where every command finds its config (`--config`, `$DROPFETCH_CONFIG`, `/etc/dropfetch/config.yaml`,
/// built-in defaults), control commands on a spool that is not there, and stderr under the journal.
@Suite("Config lookup, missing spool and journal, end to end")
struct ConfigLookupTests {
    /// An empty working folder and a spool folder next to it, removed at the end.
    private final class Place: @unchecked Sendable {
        let root = FileManager.default.temporaryDirectory.path + "/dropfetch-lookup-\(UUID().uuidString)"
        var cwd: String { root + "/cwd" }
        var spool: String { root + "/spool" }

        init() throws {
            try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        @discardableResult
        func writeConfig(_ name: String, spool: String) throws -> String {
            let path = root + "/" + name
            try "spool: \(spool)\nagent_id: lookup\n".write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func makeSpool(jobs: [String]) throws {
            try FileManager.default.createDirectory(atPath: spool + "/inbox", withIntermediateDirectories: true)
            for job in jobs {
                try "https://example.invalid/\(job)\n".write(toFile: spool + "/inbox/" + job, atomically: true, encoding: .utf8)
            }
        }

        func names(_ folder: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
        }
    }

    static let controlCommands: [[String]] = [
        ["status"], ["status", "--json"], ["hold", "x"], ["release", "x.url"], ["cancel", "x"], ["retry", "x"],
    ]

    @Test("control commands on a spool that does not exist: exit 3, a clear message, nothing created",
          .enabled(if: SystemConfigIsolation.possible, "an installed /etc/dropfetch/config.yaml cannot be hidden here"),
          arguments: controlCommands)
    func missingSpool(command: [String]) throws {
        let place = try Place()
        // Built-in defaults: ./spool in the working folder.
        let builtIn = try CommandRun(command, in: place.cwd)
        #expect(builtIn.status == 3, "\(builtIn.stderr)")
        #expect(builtIn.stderr.contains("no spool at \(place.cwd)/spool"), "\(builtIn.stderr)")
        #expect(place.names(place.cwd).isEmpty)
        // A config naming a spool that is not there.
        let config = try place.writeConfig("config.yaml", spool: place.spool)
        let named = try CommandRun(command + ["--config", config], in: place.cwd)
        #expect(named.status == 3)
        #expect(named.stderr.contains("no spool at \(place.spool)"), "\(named.stderr)")
        #expect(place.names(place.root) == ["config.yaml", "cwd"])
    }

    @Test("an existing spool: status works, and a missing job is exit 1, not 3")
    func existingSpool() throws {
        let place = try Place()
        try place.makeSpool(jobs: ["a.url"])
        let config = try place.writeConfig("config.yaml", spool: place.spool)
        let status = try CommandRun(["status", "--json", "--config", config], in: place.cwd)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("\"inbox\": 1"))
        let hold = try CommandRun(["hold", "nope", "--config", config], in: place.cwd)
        #expect(hold.status == 1, "\(hold.stderr)")
    }

    @Test("$DROPFETCH_CONFIG is used without --config, and --config wins over it")
    func environmentVariable() throws {
        let place = try Place()
        try place.makeSpool(jobs: ["a.url", "b.url"])
        let good = try place.writeConfig("good.yaml", spool: place.spool)
        let other = try place.writeConfig("other.yaml", spool: place.root + "/elsewhere")

        let fromVariable = try CommandRun(["status", "--json"], in: place.cwd, environment: ["DROPFETCH_CONFIG": good])
        #expect(fromVariable.status == 0, "\(fromVariable.stderr)")
        #expect(fromVariable.stdout.contains("\"inbox\": 2"))
        let check = try CommandRun(["check"], in: place.cwd, environment: ["DROPFETCH_CONFIG": good])
        #expect(check.stdout.contains(good))

        let overridden = try CommandRun(["status", "--config", other], in: place.cwd,
                                        environment: ["DROPFETCH_CONFIG": good])
        #expect(overridden.status == 3)
        #expect(overridden.stderr.contains(other), "the message names the config in force: \(overridden.stderr)")
    }

    /// Whether this host lets the test lay a file over /etc in a private mount namespace (root,
    /// unshare(1) and overlayfs); elsewhere the test of the system-wide default cannot run.
    static let canOverlayEtc: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return false }
        let empty = FileManager.default.temporaryDirectory.path + "/dropfetch-overlay-probe-\(UUID().uuidString)"
        guard (try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)) != nil
        else { return false }
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let probe = try? CommandRun(["-m", "--propagation", "private", "sh", "-c",
                                     "mount -t overlay overlay -o lowerdir=\(empty):/etc /etc"],
                                    program: "/usr/bin/unshare", in: "/")
        return probe?.status == 0
    }()

    @Test("/etc/dropfetch/config.yaml is the default when it exists; $DROPFETCH_CONFIG and --config win",
          .enabled(if: canOverlayEtc, "needs root, unshare(1) and overlayfs"))
    func systemConfig() throws {
        let place = try Place()
        try place.makeSpool(jobs: ["a.url", "b.url", "c.url"])
        let etc = place.root + "/etc-overlay"
        try FileManager.default.createDirectory(atPath: etc + "/dropfetch", withIntermediateDirectories: true)
        try "spool: \(place.spool)\n".write(toFile: etc + "/dropfetch/config.yaml", atomically: true, encoding: .utf8)
        let other = try place.writeConfig("other.yaml", spool: place.root + "/elsewhere")

        func run(_ arguments: [String], _ environment: [String: String?] = [:]) throws -> CommandRun {
            let script = "mount -t overlay overlay -o lowerdir=\(etc):/etc /etc && exec \"$0\" \"$@\""
            return try CommandRun(["-m", "--propagation", "private", "sh", "-c", script, SpoolFixture.binary] + arguments,
                                  program: "/usr/bin/unshare", in: place.cwd, environment: environment)
        }
        let plain = try run(["status", "--json"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout.contains("\"inbox\": 3"))
        #expect(try run(["check"]).stdout.contains("/etc/dropfetch/config.yaml"))
        #expect(try run(["status"], ["DROPFETCH_CONFIG": other]).status == 3)
        #expect(try run(["status", "--config", other]).status == 3)
        #expect(place.names(place.cwd).isEmpty)
    }

    @Test("under the journal every stderr line carries a <N> priority, start-up errors included")
    func journalPriorities() throws {
        let place = try Place()
        let bad = place.root + "/bad.yaml"
        try "spool: [\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let configError = try CommandRun(["run", "--config", bad], in: place.cwd, journal: true)
        #expect(configError.status == 2)
        #expect(configError.stderrLines.first?.hasPrefix("<3>dropfetch: \(bad):") == true, "\(configError.stderr)")

        let usage = try CommandRun(["run", "--no-such-flag"], in: place.cwd, journal: true)
        #expect(usage.status == 2)
        #expect(!usage.stderrLines.isEmpty && usage.stderrLines.allSatisfy { $0.hasPrefix("<3>") }, "\(usage.stderr)")

        let unusable = try place.writeConfig("proc.yaml", spool: "/proc/dropfetch-spool")
        let spoolError = try CommandRun(["run", "--once", "--config", unusable], in: place.cwd, journal: true)
        #expect(spoolError.status == 3)
        #expect(spoolError.stderrLines.contains { $0.hasPrefix("<2>") }, "\(spoolError.stderr)")
        #expect(spoolError.stderrLines.allSatisfy { $0.range(of: "^<[0-7]>", options: .regularExpression) != nil })

        try place.makeSpool(jobs: [])
        let config = try place.writeConfig("config.yaml", spool: place.spool)
        let once = try CommandRun(["run", "--once", "--config", config], in: place.cwd, journal: true)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stderrLines.contains { $0.hasPrefix("<6>agent started") }, "\(once.stderr)")
        #expect(once.stderrLines.allSatisfy { $0.range(of: "^<[0-7]>", options: .regularExpression) != nil })
    }

    @Test("JOURNAL_STREAM naming another file (inherited past a redirect): plain lines, no prefix")
    func journalStreamOfAnotherFile() throws {
        let place = try Place()
        let bad = place.root + "/bad.yaml"
        try "spool: [\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let result = try CommandRun(["check", "--config", bad], in: place.cwd, environment: ["JOURNAL_STREAM": "1:1"])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("dropfetch: \(bad):"), "\(result.stderr)")
    }
}
