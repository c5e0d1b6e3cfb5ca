extension Config {
    /// `split`: how many connections one download may use and how small a piece may get (docs/config.md).
    public struct Split: Sendable, Equatable {
        /// The most connections one download may open; 1 (the default) never splits.
        public var connections: Int = 1
        /// A download is split only when at least twice this many bytes remain; no piece is smaller.
        public var minSize: Int64 = 20 << 20
        public init(connections: Int = 1, minSize: Int64 = 20 << 20) {
            self.connections = connections
            self.minSize = minSize
        }

        /// Most connections the config accepts for one download, as aria2's `max-connection-per-server`.
        public static let maxConnections = 16
        /// The smallest `min_size` accepted, as aria2's `min-split-size`.
        public static let smallestMinSize: Int64 = 1 << 20

        /// What a download of a job file gets: its `split=` and `max-connection-per-server=` (the
        /// smaller of those given) capped by `connections`, and its `min-split-size=` raised to `minSize`.
        public func applied(to download: DownloadSpec) -> Split {
            let asked = [download.split, download.maxConnectionsPerServer].compactMap { $0 }.min() ?? connections
            return Split(connections: max(1, min(asked, connections)),
                         minSize: max(download.minSplitSize ?? minSize, minSize))
        }
    }

    /// The `split` settings of the job's class, or the top level's when the class has none.
    func split(forClass name: String?) -> Split {
        name.flatMap { jobClass(named: $0)?.split } ?? split
    }
}

extension ConfigLoader {
    /// A `split` mapping; keys it leaves out keep the values of `base` (the top level's, for a class).
    static func split(_ field: ConfigField, inheriting base: Config.Split) throws(ConfigError) -> Config.Split {
        var split = base
        for (key, field) in try field.entries(known: ["connections", "min_size"]) {
            switch key {
            case "connections":
                split.connections = try field.int(minimum: 1)
                guard split.connections <= Config.Split.maxConnections else {
                    throw field.error("must be at most \(Config.Split.maxConnections), got \(split.connections)")
                }
            case "min_size": split.minSize = try field.size(minimum: Config.Split.smallestMinSize)
            default: break
            }
        }
        return split
    }
}
