import Foundation
import Testing
@testable import DropFetch

/// dropfetch.yaml(5) is written from ConfigReference: its keys must be the ones ConfigLoader
/// accepts, mapping by mapping (read from the loader's own "expected one of" message), so that the
/// page and `check` cannot drift apart.
@Suite("The config reference (dropfetch.yaml(5)) and the loader")
struct ConfigReferenceTests {
    /// A parent key of the table and a config putting an unknown key `zz` right below it.
    static let parents: [(parent: String, yaml: String)] = [
        ("", "zz: 1\n"),
        ("concurrency", "concurrency: { zz: 1 }\n"),
        ("retry", "retry: { zz: 1 }\n"),
        ("limits", "limits: { zz: 1 }\n"),
        ("limits.low_speed", "limits: { low_speed: { zz: 1 } }\n"),
        ("split", "split: { zz: 1 }\n"),
        ("history", "history: { zz: 1 }\n"),
        ("tls", "tls: { zz: 1 }\n"),
        ("ftp", "ftp: { zz: 1 }\n"),
        ("sftp", "sftp: { zz: 1 }\n"),
        ("hooks", "hooks: { zz: 1 }\n"),
        ("classes[]", "classes:\n  - { name: a, zz: 1 }\n"),
        ("classes[].match", "classes:\n  - { name: a, match: { zz: 1 } }\n"),
        ("schedule[]", "schedule:\n  - { time: \"08:00-09:00\", zz: 1 }\n"),
        ("schedule[].classes.NAME", "classes:\n  - { name: a }\nschedule:\n  - { time: \"08:00-09:00\", classes: { a: { zz: 1 } } }\n"),
        ("quota[]", "quota:\n  - { period: daily, bytes: 1GB, zz: 1 }\n"),
    ]

    @Test("each mapping's keys in the table are the keys the loader accepts", arguments: parents.map(\.parent))
    func sameKeys(parent: String) throws {
        let yaml = try #require(Self.parents.first { $0.parent == parent }).yaml
        var accepted: [String] = []
        do {
            _ = try ConfigLoader.parse(yaml, file: "t.yaml")
            Issue.record("an unknown key below '\(parent)' was accepted")
        } catch {
            let marker = "expected one of "
            let message = error.message
            let range = try #require(message.range(of: marker), "\(message)")
            accepted = message[range.upperBound...].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        #expect(Set(ConfigReference.children(of: parent)) == Set(accepted),
                "table: \(ConfigReference.children(of: parent).sorted()), loader: \(accepted.sorted())")
    }

    @Test("the page: a NAME, every key as an item, FILES, and text lines that mdoc cannot read as requests")
    func page() {
        let page = ConfigManPage.render(date: "2026-11-27")
        #expect(page.hasPrefix(".Dd 2026-11-27\n.Dt DROPFETCH.YAML 5\n"))
        #expect(page.contains(".Sh FILES\n"))
        for entry in ConfigReference.entries { #expect(page.contains(".It Sy \(entry.key)\n"), "\(entry.key)") }
        for line in page.split(separator: "\n") where !line.hasPrefix(".") {
            #expect(!line.hasPrefix("'"), "\(line)")
        }
    }
}
