import Foundation
import Testing

/// Issue 15: what `dropfetch run` shows on a terminal while it works: a progress block redrawn in
/// place (job name, bar, percent, speed, ETA) with the log above it.
@Suite("Terminal progress, end to end")
struct ProgressOutputTests {
    /// The lines of a terminal's output that draw the progress of `job`: they name it and a percentage.
    static func progressLines(_ output: String, job: String) -> [String] {
        output.components(separatedBy: "\u{1B}[J").flatMap { $0.components(separatedBy: "\r\n") }
            .filter { $0.contains(job) && $0.range(of: #"\b\d{1,3}%"#, options: .regularExpression) != nil }
            .filter { !$0.contains("msg=") }
    }

    @Test("under a pseudo-terminal, run --once redraws a progress line naming the job with a percentage")
    func progressOnTerminal() throws {
        let (server, body) = try TestHTTPServer.slow("/slow.bin", seed: 15_001)
        let fixture = try SpoolFixture()
        let config = try fixture.writeInfoConfig()
        try fixture.dropSettled("slowjob.url", server.url("/slow.bin") + "\n")

        let run = try PseudoTerminalRun(["run", "--once", "--config", config], in: fixture.root.path)
        #expect(run.status == 0, "\(run.output)")
        expectDone(fixture, "slowjob.url", body: body)
        let drawn = Self.progressLines(run.output, job: "slowjob.url")
        // About 25 redraws in 2.5 s at 10 a second; 3 is the least that shows a redraw in place.
        #expect(drawn.count >= 3, "progress lines: \(drawn)\n\(run.output.debugDescription)")
        #expect(Set(drawn).count >= 2, "the progress line was never redrawn with new numbers: \(drawn)")
        #expect(run.output.contains("\r\u{1B}[J") || run.output.contains("\u{1B}[1A\u{1B}[J"),
                "no in-place redraw: \(run.output.debugDescription)")
        #expect(drawn.contains { $0.contains("ETA") && $0.contains("[") }, "no bar or ETA: \(drawn)")
        #expect(run.output.contains("total: 1 running"), "no total line")
        #expect(run.output.contains("\u{1B}[32m"), "the bar is coloured when NO_COLOR is unset")
        // Log lines still come, above the block.
        #expect(run.output.contains("msg=\"job done\""), "\(run.output.debugDescription)")
        // At the end the block is gone: the last one drawn is erased.
        let lastBlock = try #require(run.output.range(of: "total: ", options: .backwards))
        #expect(run.output[lastBlock.upperBound...].contains("\u{1B}[J"),
                "the block is left on the screen: \(run.output.suffix(300).debugDescription)")
        #expect(server.requests(to: "/slow.bin").count == 1)
    }

    @Test("NO_COLOR keeps the redraws and drops the colour; --quiet draws nothing and logs only warnings")
    func noColorAndQuiet() throws {
        let (server, _) = try TestHTTPServer.slow("/plain.bin", seed: 15_002)
        let fixture = try SpoolFixture()
        let config = try fixture.writeInfoConfig()
        try fixture.dropSettled("plain.url", server.url("/plain.bin") + "\n")
        let plain = try PseudoTerminalRun(["run", "--once", "--config", config], in: fixture.root.path,
                                          environment: ["NO_COLOR": "1"])
        #expect(plain.status == 0, "\(plain.output)")
        #expect(Self.progressLines(plain.output, job: "plain.url").count >= 2, "\(plain.output.debugDescription)")
        #expect(!plain.output.contains("\u{1B}[32m") && !plain.output.contains("\u{1B}[1m") && !plain.output.contains("\u{1B}[0m"),
                "colour despite NO_COLOR: \(plain.output.debugDescription)")

        try fixture.dropSettled("quiet.url", server.url("/plain.bin") + "\n")
        let quiet = try PseudoTerminalRun(["run", "--once", "--quiet", "--config", config], in: fixture.root.path)
        #expect(quiet.status == 0, "\(quiet.output)")
        #expect(!quiet.output.contains("\u{1B}"), "--quiet drew: \(quiet.output.debugDescription)")
        #expect(!quiet.output.contains("level=info"), "--quiet logged info lines: \(quiet.output)")
        #expect(fixture.jobs(in: "done").count == 2)
    }
}
