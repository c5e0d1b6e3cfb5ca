import Foundation
import Glibc
import Testing
@testable import DropFetch

/// `FileSystem.makeDirectories`: a symlink on the way is followed only within the root the config
/// names (`trusting`); below it, or without one, it is refused and nothing is made through it.
@Suite("Making folders")
struct MakeDirectoriesTests {
    /// A scratch folder holding `real/`, `elsewhere/` and `link -> real`.
    private func makeScratch() throws -> String {
        let path = NSTemporaryDirectory() + "dropfetch-mkdirs-\(UUID().uuidString)"
        for folder in ["real", "elsewhere"] {
            try FileManager.default.createDirectory(atPath: path + "/" + folder, withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(atPath: path + "/link", withDestinationPath: path + "/real")
        return path
    }

    private func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    @Test("a root that is a symlink, or lies behind one, is followed: its missing folders are made in the real place")
    func trustedRootFollowed() throws {
        let scratch = try makeScratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileSystem.makeDirectories(scratch + "/link", trusting: scratch + "/link")
        try FileSystem.makeDirectories(scratch + "/link/spool/inbox", trusting: scratch + "/link/spool")
        #expect(isFolder(scratch + "/real/spool/inbox"))
    }

    @Test("a symlink below the trusted root, or with no root trusted, is refused (ENOTDIR): nothing is made through it")
    func symlinkBelowRootRefused() throws {
        let scratch = try makeScratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch + "/real/root", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: scratch + "/real/root/planted", withDestinationPath: scratch + "/elsewhere")
        #expect(throws: SystemError.self) { try FileSystem.makeDirectories(scratch + "/link/root/planted/x", trusting: scratch + "/link/root") }
        #expect(throws: SystemError.self) { try FileSystem.makeDirectories(scratch + "/link/spool") }
        // A trusted path that is not a prefix of the one made trusts nothing of it.
        #expect(throws: SystemError.self) { try FileSystem.makeDirectories(scratch + "/link/spool", trusting: scratch + "/other") }
        do {
            try FileSystem.makeDirectories(scratch + "/link/root/planted/x", trusting: scratch + "/link/root")
        } catch {
            #expect(error.code == ENOTDIR)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch + "/elsewhere").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: scratch + "/real/spool"))
    }

    @Test("a symlink in a folder others may write (group-writable like a spool, or /tmp) is refused even in the trusted root")
    func symlinkInSharedFolderRefused() throws {
        let scratch = try makeScratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch + "/shared", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: scratch + "/shared/downloads", withDestinationPath: scratch + "/elsewhere")
        #expect(chmod(scratch + "/shared", 0o2775) == 0)
        #expect(throws: SystemError.self) {
            try FileSystem.makeDirectories(scratch + "/shared/downloads", trusting: scratch + "/shared/downloads")
        }
        #expect(chmod(scratch + "/shared", 0o755) == 0)
        try FileSystem.makeDirectories(scratch + "/shared/downloads/x", trusting: scratch + "/shared/downloads")
        #expect(isFolder(scratch + "/elsewhere/x"))
    }

    @Test("a chain of links is checked at each hop: a link in an admin's folder to one in a group-writable folder is refused; two admin links are followed")
    func chainCheckedAtEachHop() throws {
        let scratch = try makeScratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch + "/shared", withIntermediateDirectories: false)
        #expect(chmod(scratch + "/shared", 0o2775) == 0)
        try FileManager.default.createSymbolicLink(atPath: scratch + "/shared/inner", withDestinationPath: scratch + "/elsewhere")
        try FileManager.default.createSymbolicLink(atPath: scratch + "/hop", withDestinationPath: scratch + "/shared/inner")
        #expect(throws: SystemError.self) { try FileSystem.makeDirectories(scratch + "/hop/x", trusting: scratch + "/hop") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch + "/elsewhere").isEmpty)
        // link2 -> link -> real: both links in the scratch folder, which is this user's (0755).
        try FileManager.default.createSymbolicLink(atPath: scratch + "/link2", withDestinationPath: "link")
        try FileSystem.makeDirectories(scratch + "/link2/y", trusting: scratch + "/link2")
        #expect(isFolder(scratch + "/real/y"))
    }
}
