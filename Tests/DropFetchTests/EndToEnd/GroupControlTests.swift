import DropFetch
import Foundation
import Glibc
import Testing

/// The installed layout (issue 25, item 1): the spool made as contrib/dropfetch.tmpfiles makes it
/// (2770, owned by the service user and its group), the agent under the unit's `UMask=0007` as
/// an unprivileged user, and a person in the group (another uid) who holds, releases, cancels
/// and retries its jobs and removes a finished download. setpriv(1) switches to numeric ids, so
/// no user is added to the system.
@Suite("Group members control the service's jobs, end to end")
struct GroupControlTests {
    static let agentUID = 61_025
    static let memberUID = 61_026
    static let groupID = 61_025

    static let canSwitchUsers = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")

    /// `dropfetch ARGUMENTS --config CONFIG` as `uid` in the group, under umask 0007.
    private static func process(_ arguments: [String], uid: Int, config: String, log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(uid)", "--regid=\(groupID)", "--groups=\(groupID)", "/bin/sh", "-c",
                             "umask 0007 && exec \"$0\" \"$@\"", SpoolFixture.binary] + arguments + ["--config", config]
        var environment = ProcessInfo.processInfo.environment
        environment["DROPFETCH_CRASH_AT"] = nil
        environment["JOURNAL_STREAM"] = nil
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        return process
    }

    /// A control command run by the group member; its exit status.
    private static func member(_ arguments: [String], config: String, log: String) throws -> Int32 {
        let command = try process(arguments, uid: memberUID, config: config, log: log)
        try command.runSerially()
        command.waitUntilExit()
        return command.terminationStatus
    }

    @Test("a member of the group holds, releases, cancels and retries the agent's jobs and removes a download",
          .enabled(if: canSwitchUsers, "needs root and setpriv(1) to run as other users"))
    func memberControlsJobs() throws {
        let server = try TestHTTPServer()
        let body = TestHTTPServer.randomBytes(1_200_000, seed: 2_520)
        server.serve("/g.bin", body: body, faults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))])
        server.serve("/c.bin", body: body, faults: [.times(1, .drip(bytesPerChunk: 40_000, interval: .milliseconds(60)))])
        let fixture = try SpoolFixture()
        // contrib/dropfetch.tmpfiles: the spool and its folders 2770, the service's user and group.
        for folder in ["", "/inbox", "/hold", "/work", "/done", "/failed"] {
            let path = fixture.spool + folder
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            #expect(chown(path, uid_t(Self.agentUID), gid_t(Self.groupID)) == 0)
            #expect(chmod(path, 0o2770) == 0)
        }
        // The destination is the default one below the spool, made by the agent.
        let config = fixture.root.path + "/group.yaml"
        try """
            spool: \(fixture.spool)
            agent_id: vm
            retry: { attempts: 1, initial_delay: 100ms, max_delay: 1s }

            """.write(toFile: config, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: fixture.logPath, contents: nil)
        chmod(fixture.root.path, 0o755)
        let agent = try Self.process(["run"], uid: Self.agentUID, config: config, log: fixture.logPath)
        try agent.runSerially()
        defer { if agent.isRunning { kill(agent.processIdentifier, SIGKILL); agent.waitUntilExit() } }
        let work = fixture.spool + "/work/vm"
        let downloads = fixture.spool + "/downloads"
        let drop = { (name: String, path: String) in
            try server.url(path).appending("\n").write(toFile: fixture.spool + "/inbox/" + name, atomically: false, encoding: .utf8)
        }
        try drop("g.url", "/g.bin")
        #expect(try waitUntil { (fixture.fileSize(downloads + "/.g.bin.part") ?? 0) >= 100_000 }, "\(fixture.log)")
        let workMode = try #require(try? FileManager.default.attributesOfItem(atPath: work)[.posixPermissions] as? Int)
        #expect(workMode & 0o070 == 0o070, "work/vm is \(String(workMode, radix: 8))")

        #expect(try Self.member(["hold", "g"], config: config, log: fixture.logPath) == 0, "\(fixture.log)")
        #expect(fixture.jobs(in: "hold") == ["g.url"])
        #expect(try Self.member(["release", "g"], config: config, log: fixture.logPath) == 0, "\(fixture.log)")
        #expect(try waitUntil { fixture.jobs(in: "done") == ["g.url"] }, "\(fixture.log)")

        try drop("c.url", "/c.bin")
        #expect(try waitUntil { (fixture.fileSize(downloads + "/.c.bin.part") ?? 0) >= 100_000 }, "\(fixture.log)")
        #expect(try Self.member(["cancel", "c"], config: config, log: fixture.logPath) == 0, "\(fixture.log)")
        #expect(fixture.jobs(in: "failed") == ["c.url"])
        #expect(try Self.member(["retry", "c"], config: config, log: fixture.logPath) == 0, "\(fixture.log)")
        #expect(try waitUntil { fixture.jobs(in: "done").sorted() == ["c.url", "g.url"] }, "\(fixture.log)")

        // A finished download: the member removes it (the folder is the group's to write).
        let remove = try Self.process([], uid: Self.memberUID, config: config, log: fixture.logPath)
        remove.arguments = ["--reuid=\(Self.memberUID)", "--regid=\(Self.groupID)", "--groups=\(Self.groupID)",
                            "/bin/rm", downloads + "/g.bin"]
        try remove.runSerially()
        remove.waitUntilExit()
        #expect(remove.terminationStatus == 0, "\(fixture.log)")
        #expect(!FileManager.default.fileExists(atPath: downloads + "/g.bin"))
        kill(agent.processIdentifier, SIGTERM)
        agent.waitUntilExit()
        #expect(agent.terminationStatus == 0, "\(fixture.log)")
    }
}
