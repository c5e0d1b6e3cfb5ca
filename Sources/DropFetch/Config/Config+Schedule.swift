/// The `schedule:` windows and `quota:` caps of docs/config.md "Schedules and quotas".
extension Config {
    /// One `schedule:` entry: on its days, from `start` to `end` local time, its limits replace the config's.
    public struct ScheduleWindow: Sendable, Equatable {
        /// What `pause` does to transfers inside the window.
        public enum Pause: String, Sendable, Equatable {
            /// `pause: true`: nothing starts, running transfers pause keeping their data.
            case all
            /// `pause: new`: nothing starts, running transfers finish.
            case new
            /// `pause: false`: lifts the pause of an earlier window.
            case off
        }

        /// A class's limits inside the window; nil keeps the class's own.
        public struct ClassLimits: Sendable, Equatable {
            /// Bytes per second; 0 means none inside the window.
            public var rateLimit: Int64?
            public var maxActive: Int?
            public init(rateLimit: Int64? = nil, maxActive: Int? = nil) {
                self.rateLimit = rateLimit
                self.maxActive = maxActive
            }
        }

        /// The days the window starts on, by `tm_wday` (0 is Sunday).
        public var days: Set<Int> = Set(0...6)
        /// Minutes after local midnight, 0..<1440.
        public var start = 0
        /// Minutes after local midnight, 1...1440; not after `start` means the window ends the next day.
        public var end = 1440
        /// `limits.rate_limit` inside the window (0: none).
        public var rateLimit: Int64?
        /// `concurrency.total` inside the window.
        public var concurrency: Int?
        public var classes: [String: ClassLimits] = [:]
        public var pause: Pause?
        /// The text of `days` and `time`, as written, for logs and `status`.
        public var label = ""

        public init() {}

        /// Whether the window ends on the day after it starts.
        public var crossesMidnight: Bool { end <= start }
    }

    /// One `quota:` entry: at most `bytes` fetched per period, for all jobs or one class.
    public struct Quota: Sendable, Equatable {
        public enum Period: String, Sendable, Equatable, CaseIterable { case daily, weekly, monthly }

        /// What a transfer that is running when the quota is reached does.
        public enum Running: String, Sendable, Equatable { case finish, pause }

        public var period: Period
        public var bytes: Int64
        /// nil: every job counts.
        public var className: String?
        public var running: Running = .finish

        public init(period: Period, bytes: Int64, className: String? = nil, running: Running = .finish) {
            self.period = period
            self.bytes = bytes
            self.className = className
            self.running = running
        }

        /// `daily` or `daily iso`, for logs, `status` and the metrics file.
        public var label: String { className.map { "\(period.rawValue) \($0)" } ?? period.rawValue }
    }
}
