import Glibc

/// The spool folders of docs/spool.md and the moves between them: claim, file, adopt.
final class Spool {
    /// A job file seen in the inbox.
    struct InboxEntry: Sendable, Equatable {
        /// Path relative to the inbox, e.g. `urgent/x.url`.
        var relativePath: String
        /// The subfolder (routing key), empty at the top level.
        var folder: String {
            let directory = FileSystem.directoryName(of: relativePath)
            return directory == "." ? "" : directory
        }
        var name: String { FileSystem.baseName(of: relativePath) }
        /// Modification time in nanoseconds, for start-up arrival order.
        var modified: Int64
    }

    enum Outcome: String, Sendable { case done, failed }

    let root: String
    let agentID: String
    let durable: Bool
    let inbox: String
    let hold: String
    let done: String
    let failed: String
    let work: String
    let workRoot: String
    private var lock: FileDescriptor?
    /// Seals the resume records (RecordKey): the agent's, set when it starts; nil in a control
    /// command that cannot read it (it cannot check a record's seal then).
    var recordKey: RecordKey?
    /// The next record number to try per `folder/job name`, so that many records of one name do
    /// not probe from 1 each time (Spool+Filing.swift; the loop's).
    var nextRecordNumber: [String: Int] = [:]
    /// Open handles on done/, failed/ and work folders, for their syncs (`folderHandle`; the loop's).
    var folderHandles: [String: (handle: DirectoryHandle, checked: Int64)] = [:]
    /// The inbox and this agent's work folder, opened by `open()` and never replaced: the claim
    /// worker reads them while the loop runs.
    private(set) var inboxFolder: DirectoryHandle?
    private(set) var workFolder: DirectoryHandle?
    /// Routing folders found deeper than `InboxScan.maxDepth` and already reported.
    var reportedDeepFolders: Set<String> = []
    var crashPlan: CrashPlan?
    /// This agent's journal of filings (RecentFilings reads it for the recent view).
    let journal: FilingJournal
    /// This agent's index of the URLs its done jobs fetched (duplicates, `DuplicateCheck`).
    let doneIndex: DoneIndex

    /// The folders every agent of a spool shares, made by `open()` (and by `add` on a new spool).
    static let folderNames = ["inbox", "hold", "done", "failed", "work"]

    init(root: String, agentID: String, durable: Bool) {
        self.root = root
        self.agentID = agentID
        self.durable = durable
        inbox = root + "/inbox"
        hold = root + "/hold"
        done = root + "/done"
        failed = root + "/failed"
        workRoot = root + "/work"
        work = FileSystem.join(workRoot, agentID)
        journal = FilingJournal(root: root, agent: agentID)
        doneIndex = DoneIndex(root: root, agent: agentID)
    }

    /// Creates missing folders and takes this agent's `work/<agent>/.lock` (flock(2)), trying for
    /// `patience` tries of 10 ms (an adopter holds it for the time of its moves).
    func open(patience: Int = 50) throws(SpoolError) {
        do {
            for folder in Spool.folderNames.map({ root + "/" + $0 }) + [work] { try FileSystem.makeDirectories(folder, trusting: root) }
            let file = try FileDescriptor.open(work + "/.lock", flags: O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o644)
            guard try Spool.lockAllowingProbes(file, tries: patience) else {
                throw SpoolError.agentRunning(agentID, work)
            }
            lock = file
            inboxFolder = try DirectoryHandle.openRoot(inbox, create: false)
            workFolder = try DirectoryHandle.openRoot(work, create: false)
            guard access(root, W_OK) == 0, access(work, W_OK) == 0 else {
                throw SystemError.current("access (write)", work)
            }
        } catch let error as SpoolError {
            throw error
        } catch let error as SystemError {
            throw SpoolError.unusable(error)
        } catch {
            throw SpoolError.unusable(SystemError(code: EIO, operation: "\(error)"))
        }
    }

    /// Lets go of the work folder's lock (close(2)): a fenced agent owns nothing there any more.
    func releaseLock() {
        lock = nil
    }

    /// Takes a work folder's flock(2), trying for up to half a second: an agent checking whether
    /// this one is dead (`adoptOrphans`) holds the lock for a moment, a live agent for good.
    private static func lockAllowingProbes(_ file: FileDescriptor, tries: Int) throws(SystemError) -> Bool {
        for _ in 0..<max(1, tries) {
            if try file.tryLockExclusive() { return true }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            _ = nanosleep(&pause, nil)
        }
        return false
    }

    /// A job file's name: not hidden, ending in `.url` in any case (`X.URL` from a Windows share), with a stem.
    static func isJobName(_ name: String) -> Bool {
        // On the bytes in place: the watch asks this of every name an event carries.
        var name = name
        return name.withUTF8 { bytes in
            let count = bytes.count
            guard count > 4, bytes[0] != UInt8(ascii: "."), bytes[count - 4] == UInt8(ascii: ".") else { return false }
            // `| 0x20` lowers an ASCII capital; no other byte becomes `u`, `r` or `l` by it.
            return bytes[count - 3] | 0x20 == UInt8(ascii: "u") && bytes[count - 2] | 0x20 == UInt8(ascii: "r")
                && bytes[count - 1] | 0x20 == UInt8(ascii: "l")
        }
    }

    /// `x.url`, `x.1.url`, `x.2.url`, …: record names that never overwrite (invariant 5).
    ///
    /// A stem over 200 bytes is shortened (`FileName.shortened`) so that `<stem>.N.status.json` and
    /// its temp file fit NAME_MAX; the status file's `job` keeps the name as dropped.
    static func candidateNames(_ name: String) -> some Sequence<String> {
        (0..<100_000).lazy.map { candidateName(name, number: $0) }
    }

    static func candidateName(_ name: String, number: Int) -> String {
        // The usual case, a `.url` name of at most 200 bytes before it: the name itself.
        if number == 0, name.utf8.count <= 204, FileSystem.hasASCIISuffix(name, ".url") { return name }
        let stem = FileName.shortened(String(name.dropLast(4)), maxBytes: 200)
        return number == 0 ? stem + ".url" : "\(stem).\(number).url"
    }

    static func statusName(forJob name: String) -> String {
        FileSystem.concat(name, dropping: 4, ".status.json")
    }

    static func stateName(forJob name: String) -> String {
        FileSystem.concat(name, dropping: 4, ".state.json")
    }

    /// A status or state file of the spool, read without blocking or following a symlink
    /// (`UntrustedFile`): the spool is shared with peers.
    func readRecord(at path: String) -> StatusRecord? {
        Spool.readRecord(at: path)
    }

    static func readRecord(at path: String) -> StatusRecord? {
        guard let file = try? UntrustedFile.read(atPath: path, limit: StatusRecord.maxFileSize) else { return nil }
        return StatusRecord.decode(file.bytes)
    }

    /// Not fsynced: a state file is advice (progress, attempts, routing folder, retry time). What a
    /// restart must get right comes from the job file, the `.part` and its resume record, so a
    /// state lost to a power cut costs at most an attempt count or an early retry.
    /// `work/<agent>/.<job>.state.json`.
    func statePath(for workName: String) -> String {
        FileSystem.join(work, Spool.stateName(forJob: workName))
    }

    func readState(for workName: String, in folder: String? = nil) -> StatusRecord? {
        readRecord(at: (folder ?? work) + "/" + Spool.stateName(forJob: workName))
    }
}

/// Why the spool cannot be used (exit code 3).
public enum SpoolError: Error, Sendable, CustomStringConvertible {
    case unusable(SystemError)
    case agentRunning(String, String)

    public var description: String {
        switch self {
        case .unusable(let error): return "spool not usable: \(error)"
        case .agentRunning(let agent, let folder):
            return "another agent with agent_id '\(agent)' is running (\(folder)/.lock is held)"
        }
    }
}
