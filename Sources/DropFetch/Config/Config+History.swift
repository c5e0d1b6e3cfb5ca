extension Config {
    /// `history:`: how long finished jobs' record pairs stay in done/ and failed/ (docs/spool.md,
    /// HistoryRetention); nil keeps them forever.
    public struct History: Sendable, Equatable {
        /// A record pair is removed once its status file's `finished` time is older than this.
        public var keep: Duration?
        /// At most this many finished jobs are kept, done/ and failed/ together, the oldest removed first.
        public var maxJobs: Int?

        public init(keep: Duration? = nil, maxJobs: Int? = nil) {
            self.keep = keep
            self.maxJobs = maxJobs
        }

        /// Whether the rule removes anything at all.
        public var removesAnything: Bool { keep != nil || maxJobs != nil }

        /// The units of a history duration and their length in seconds.
        private static let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]

        /// `90m`, `30d`: an integer and one of `s`, `m`, `h`, `d` (DESIGN.md §10), at most 100
        /// years; nil for anything else (no unit, a sign, compounds).
        public static func duration(_ text: String) -> Duration? {
            guard let unit = text.last, let seconds = units[unit] else { return nil }
            let digits = text.dropLast()
            guard !digits.isEmpty, digits.count <= 12, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let number = Int64(digits) else { return nil }
            let total = number * seconds
            guard total <= Units.maxDurationMilliseconds / 1000 else { return nil }
            return .seconds(total)
        }
    }
}
