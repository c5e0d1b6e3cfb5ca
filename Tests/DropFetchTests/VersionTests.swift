import Foundation
import Testing
@testable import DropFetch

@Test func version() { #expect(!DropFetchVersion.string.isEmpty) }

/// The VERSION file is the version `make deb` packages; the binary's must be the same.
@Test func versionMatchesTheVersionFile() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let file = try String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8)
    #expect(file.trimmingCharacters(in: .whitespacesAndNewlines) == DropFetchVersion.string)
}
