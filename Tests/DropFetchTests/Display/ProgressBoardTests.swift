import Testing
@testable import DropFetch

@Suite struct ProgressBoardTests {
    static let iso = ProgressSnapshot.Download(job: "ubuntu.url", file: "ubuntu.iso", bytes: 1_288_490_188,
                                               size: 2_791_728_742, bytesPerSecond: 12_897_484)

    @Test("one line per download and a total line, each within the width", arguments: [40, 80, 132, 300])
    func fitsTheWidth(width: Int) {
        let other = ProgressSnapshot.Download(job: String(repeating: "long-name-", count: 12) + ".url", file: "x.bin",
                                              bytes: 10, size: nil, bytesPerSecond: nil)
        let lines = ProgressBoard.lines(ProgressSnapshot(downloads: [Self.iso, other], queued: 3, waiting: 1), width: width)
        #expect(lines.count == 3)
        for line in lines { #expect(line.text.count <= width - 1, "\(line.text)") }
        #expect(lines[0].text.hasPrefix("ubuntu.url"))
        #expect(lines[2].text.hasPrefix("total: 2 running, 3 queued, 1 waiting"))
    }

    @Test("a download's line: name, bar, percent, bytes of size, speed, ETA")
    func downloadLine() throws {
        let lines = ProgressBoard.lines(ProgressSnapshot(downloads: [Self.iso]), width: 100)
        let text = lines[0].text
        #expect(text.contains("ubuntu.url [") && text.contains("]  46%"), "\(text)")
        #expect(text.contains("1.20 GiB / 2.60 GiB"), "\(text)")
        #expect(text.contains("12.3 MiB/s"), "\(text)")
        #expect(text.contains("ETA 1m57s"), "\(text)")
        let fill = try #require(lines[0].fill)
        #expect(fill.count > 0 && Array(text)[fill].allSatisfy { $0 == "=" || $0 == ">" })
        #expect(lines[1].text.contains("46%") && lines[1].text.contains("ETA 1m57s"), "\(lines[1].text)")
    }

    @Test("unknown size and speed show dashes; the bar stays empty")
    func unknowns() {
        let download = ProgressSnapshot.Download(job: "j.url", file: nil, bytes: 2048, size: nil, bytesPerSecond: nil)
        let text = ProgressBoard.lines(ProgressSnapshot(downloads: [download]), width: 80)[0].text
        #expect(text.contains("--%") && text.contains("2.0 KiB") && text.contains("ETA --"), "\(text)")
        #expect(!text.contains("="))
    }

    @Test("the bar's width does not change as the numbers grow")
    func steadyBar() {
        func bar(_ bytes: Int64, _ speed: Int64?) -> Int {
            let download = ProgressSnapshot.Download(job: "j.url", file: nil, bytes: bytes, size: 1 << 30, bytesPerSecond: speed)
            let text = ProgressBoard.lines(ProgressSnapshot(downloads: [download]), width: 100)[0].text
            return text.split(separator: "[")[1].split(separator: "]")[0].count
        }
        #expect(bar(0, nil) == bar(900_000_000, 123_456_789))
    }

    @Test("control characters in a name never reach the terminal")
    func controls() {
        let download = ProgressSnapshot.Download(job: "J27-\u{1B}[31mred\nFAKE.url", file: nil, bytes: 1, size: 2,
                                                 bytesPerSecond: 1)
        let text = ProgressBoard.lines(ProgressSnapshot(downloads: [download]), width: 100)[0].text
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
        #expect(text.hasPrefix("J27-?[31mred?FAKE.url"))
    }

    @Test("idle: no lines; many downloads: capped with a count of the rest")
    func idleAndMany() {
        #expect(ProgressBoard.lines(ProgressSnapshot(), width: 80).isEmpty)
        let many = (0..<20).map {
            ProgressSnapshot.Download(job: "j\($0).url", file: nil, bytes: 1, size: 10, bytesPerSecond: nil)
        }
        let lines = ProgressBoard.lines(ProgressSnapshot(downloads: many), width: 80, maxRows: 6)
        #expect(lines.count == 6)
        #expect(lines[4].text.contains("and 16 more running"), "\(lines.map(\.text))")
        #expect(lines[5].text.hasPrefix("total: 20 running"))
    }

    @Test("a job of several downloads names the file too")
    func severalDownloads() {
        let download = ProgressSnapshot.Download(job: "set.url", file: "part2.bin", downloadsInJob: 3, bytes: 1, size: 2,
                                                 bytesPerSecond: nil)
        #expect(ProgressBoard.lines(ProgressSnapshot(downloads: [download]), width: 80)[0].text.hasPrefix("set.url part2.bin"))
    }
}
