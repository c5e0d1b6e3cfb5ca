/// What the agent is downloading at one moment, handed by value to `Agent.Options.progress`
/// (the terminal progress of `dropfetch run`): the library draws nothing itself.
public struct ProgressSnapshot: Sendable, Equatable {
    /// One running download.
    public struct Download: Sendable, Equatable {
        /// The job's name as dropped (`x.url`).
        public var job: String
        /// The final file's name (no folder); nil before the name is chosen.
        public var file: String?
        /// How many downloads the job has (a label may then name the file too).
        public var downloadsInJob: Int
        /// Bytes of the file so far, resumed data included.
        public var bytes: Int64
        /// The full size, once the server has said it.
        public var size: Int64?
        /// The speed over the last few seconds; nil until measured.
        public var bytesPerSecond: Int64?

        public init(job: String, file: String?, downloadsInJob: Int = 1, bytes: Int64, size: Int64?,
                    bytesPerSecond: Int64?) {
            self.job = job
            self.file = file
            self.downloadsInJob = downloadsInJob
            self.bytes = bytes
            self.size = size
            self.bytesPerSecond = bytesPerSecond
        }
    }

    /// The running downloads, in the order they started.
    public var downloads: [Download]
    /// Downloads ready to start once a slot frees.
    public var queued: Int
    /// Downloads waiting for a retry, free space or a name's owner.
    public var waiting: Int

    public init(downloads: [Download] = [], queued: Int = 0, waiting: Int = 0) {
        self.downloads = downloads
        self.queued = queued
        self.waiting = waiting
    }

    /// Nothing runs: a display clears its progress.
    public var isIdle: Bool { downloads.isEmpty }
}

/// Receives the agent's progress on the event loop thread, at most 10 times a second while
/// transfers run, and once with an idle snapshot when the last one ends.
public typealias ProgressObserver = @Sendable (ProgressSnapshot) -> Void
