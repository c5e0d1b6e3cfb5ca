import Testing
@testable import DropFetch
@Test func version() { #expect(!DropFetchVersion.string.isEmpty) }
