import FoundationEssentials

/// What is known about a `.part` file, kept beside it as `.<file>.part.json`: who owns it, and
/// what a later run needs to ask for the rest with `Range` + `If-Range` (RFC 9110 §13.1.5).
///
/// The record is the on-disk proof of name ownership (invariant 6): it names the owner job and its
/// claim (the job file's inode, which every move of the job keeps), so another job, another agent
/// or a restart never takes the name, and recovery never mistakes another job's file for its own.
struct ResumeRecord: Codable, Sendable, Equatable {
    var schema = 3
    /// The owner job's name as dropped (`x.url`).
    var owner: String
    /// The owner's claim: the inode of its job file, kept by rename(2) and link(2).
    var claim: UInt64
    /// The inode of the `.part` itself, so that recovery can tell its own published file.
    var part: UInt64
    /// The URL the data came from, credentials replaced by `***`: a partial download left behind
    /// must not keep a password in the destination.
    var url: String?
    /// The index of the mirror that wrote the data: the next attempt starts there.
    var mirror = 0
    /// A strong ETag; weak ones (`W/`) cannot validate byte ranges.
    var etag: String?
    var lastModified: String?
    /// The complete size announced by the server, when it did.
    var size: Int64?
    /// FTP and SFTP: the remote file's modification time in seconds since the epoch (`MDTM`, the
    /// SFTP stat; CURLINFO_FILETIME_T). With `size` it is the validator of a file-based resume.
    var modified: Int64?
    /// Bytes of the `.part` that were fsynced when this record was written: the record never counts
    /// bytes that a power loss could take back.
    var bytes: Int64 = 0
    /// The boot (BootID) of the last write: on the same boot the whole `.part` is in the page
    /// cache whatever killed its writer; on another boot or host only `bytes` can be trusted.
    var boot: String?
    /// A download written by several connections (issue 26): the byte ranges written when this
    /// record was written; nil for data written in order from byte 0.
    var pieces: [PieceMap.Range]?
    /// Of `pieces`, the ranges that were fsynced when this record was written.
    var syncedPieces: [PieceMap.Range]?

    init(owner: String, claim: UInt64, part: UInt64) {
        self.owner = owner
        self.claim = claim
        self.part = part
    }

    /// The `If-Range` value: the strong ETag, else Last-Modified; nil when nothing proves that
    /// the server still has the same file, and the data must then be fetched again from zero.
    var validator: String? { etag ?? lastModified }

    /// Whether the data can be resumed over `kind`: HTTP needs a validator for `If-Range`; FTP and
    /// SFTP need the size and modification time the remote file must still have.
    func canResume(over kind: TransferProtocol) -> Bool {
        kind.isFileBased ? size != nil && modified != nil : validator != nil
    }

    /// Records the validators of the response that is being written, in order from its offset.
    mutating func describe(url: String, mirror: Int, etag: String?, lastModified: String?, size: Int64?,
                           modified: Int64? = nil) {
        self.url = url
        self.mirror = mirror
        self.etag = etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
        self.lastModified = lastModified
        self.size = size
        self.modified = modified
        // This response is written in order from its offset: no piece map describes it.
        pieces = nil
        syncedPieces = nil
    }

    /// Whether a response's validators prove it is the recorded file (a strong comparison).
    func matches(etag responseETag: String?, lastModified responseDate: String?) -> Bool {
        if let etag { return responseETag == etag }
        if let lastModified { return responseDate == lastModified }
        return false
    }

    func isOwned(by owner: PartOwner) -> Bool { claim == owner.claim && self.owner == owner.job }

    static func name(forPart part: String) -> String { part + ".json" }

    /// The bytes of the `.part` that can be trusted without asking the disk: all of them when this
    /// record was last written on the running boot, else the fsynced prefix it counts.
    /// A piece map's record counts only its contiguous prefix here: the bytes after a hole must
    /// never be taken as data by a resume that appends.
    func trustedBytes(of size: Int64, bootNow: String? = BootID.current) -> Int64 {
        if pieces != nil { return min(size, trustedPieces(of: size, bootNow: bootNow)?.prefix ?? 0) }
        let trusted = boot != nil && boot == bootNow ? size : min(size, bytes)
        return self.size.map { min(trusted, $0) } ?? trusted
    }

    /// The pieces of a segmented download that can be trusted, by the rule of `trustedBytes`: all
    /// written ones when this record was last written on the running boot, else the fsynced ones;
    /// only those inside the `.part`'s `size`. Nil without a piece map or a known file size.
    func trustedPieces(of size: Int64, bootNow: String? = BootID.current) -> PieceMap? {
        guard let pieces, let total = self.size else { return nil }
        let inFile = PieceMap(total: total, done: [PieceMap.Range(0, min(size, total))])
        let written = PieceMap(total: total, done: pieces).intersection(inFile)
        guard boot != nil, boot == bootNow else {
            return PieceMap(total: total, done: syncedPieces ?? []).intersection(written)
        }
        return written
    }

    static func decode(_ bytes: [UInt8]) -> ResumeRecord? {
        try? JSONDecoder().decode(ResumeRecord.self, from: Data(bytes))
    }

    /// The `seal` field of a record file (ResumeRecordFile), which is not one of the record's own.
    static func seal(in bytes: [UInt8]) -> String? {
        struct Sealed: Decodable { var seal: String }
        return (try? JSONDecoder().decode(Sealed.self, from: Data(bytes)))?.seal
    }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data())
    }
}

/// The job that owns a `.part` name: its name as dropped and its claim (job file inode).
struct PartOwner: Sendable, Equatable {
    var job: String
    var claim: UInt64
}
