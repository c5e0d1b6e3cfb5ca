import DropFetch
import Foundation
import Testing

/// docs/architecture.md: a hook inherits stdin, stdout and stderr and nothing else, even while downloads
/// hold connections open (libcurl's own sockets cannot be marked close-on-exec from outside).
@Suite("Hooks inherit only descriptors 0, 1 and 2")
struct HookDescriptorTests {
    /// Lists the shell's own descriptors, given inline (`sh -c`) so that the shell holds no
    /// script file open. The glob is expanded before anything is redirected, and an entry is kept
    /// only if it still exists after the glob: that drops the descriptor the shell had open on
    /// /proc/$$/fd itself while reading it.
    static let script = #"fds=""; for f in /proc/$$/fd/*; do if [ -e "$f" ]; then fds="$fds ${f##*/}"; fi; done; "#
        + #"echo "$fds" > "$1.tmp" && mv "$1.tmp" "$1""#

    @Test("a hook run while a download is in flight sees only 0, 1 and 2 in /proc/self/fd")
    func onlyStandardDescriptors() throws {
        let server = try TestHTTPServer()
        // 2 MB at 4 KB per 50 ms: the connection stays open for the whole test.
        server.serve("/slow.bin", body: TestHTTPServer.randomBytes(2_000_000, seed: 120),
                     faults: [.drip(bytesPerChunk: 4_096, interval: .milliseconds(50))])
        server.serve("/quick.bin", body: TestHTTPServer.randomBytes(2_000, seed: 121))
        let fixture = try SpoolFixture()
        let output = fixture.root.path + "/hook-fds"
        try fixture.writeConfig("hooks:\n  on_done: [/bin/sh, -c, '\(Self.script)', sh, \(output)]\n")
        try fixture.startDaemon()
        defer { fixture.killDaemon() }

        try fixture.drop("slow.url", server.url("/slow.bin") + "\n")
        #expect(try waitUntil { (server.requests(to: "/slow.bin").first?.bodyBytesSent ?? 0) > 0 },
                "the slow download did not start")
        try fixture.drop("quick.url", server.url("/quick.bin") + "\n")
        #expect(try waitUntil { FileManager.default.fileExists(atPath: output) }, "the hook did not run: \(fixture.log)")
        #expect(server.requests(to: "/slow.bin").first?.isFinished == false, "the slow download ended before the hook ran")

        let listed = try String(contentsOfFile: output, encoding: .utf8)
        let descriptors = Set(listed.split(whereSeparator: \.isWhitespace).compactMap { Int($0) })
        #expect(!descriptors.isEmpty, "the hook listed nothing: \(listed)")
        #expect(descriptors.isSubset(of: [0, 1, 2]), "the hook inherited \(descriptors.sorted())")
        #expect(try fixture.stopDaemon() == 0)
    }
}
