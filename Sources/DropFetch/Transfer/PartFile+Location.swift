extension PartFile {
    /// Where a part is, as a `Sendable` value: what a step on a worker needs of a part the loop
    /// holds (publishing it, removing it), never the part itself, which only the loop changes.
    struct Location: Sendable {
        let folder: DirectoryHandle
        let name: String
        let finalName: String

        var recordName: String { ResumeRecord.name(forPart: name) }
        var finalPath: String { FileSystem.join(folder.path, finalName) }

        /// Removes the part and its record (the files of `discard`), and a record's temp that a
        /// kill left mid-write: nothing else clears it once no part of this name is reserved
        /// again. The temp goes first, while the part still holds the name, so it is this part's.
        func remove() {
            try? folder.removeIfPresent(PartFile.recordTempName(of: recordName))
            try? folder.removeIfPresent(name)
            try? folder.removeIfPresent(recordName)
        }
    }

    var location: Location { Location(folder: folder, name: name, finalName: finalName) }

    /// The fixed temp name a new record file is written under before its rename (`writeRecord`).
    static func recordTempName(of recordName: String) -> String { "." + recordName + ".tmp" }
}
