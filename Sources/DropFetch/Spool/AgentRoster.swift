/// Every agent that has a work folder in the spool and whether it runs (AgentLiveness: a live
/// agent holds the flock(2) on its `work/<agent>/.lock`), for the status page.
public struct AgentRoster: Sendable, Equatable {
    public struct Member: Sendable, Equatable {
        public var name: String
        public var alive: Bool
        /// Job files in its work folder.
        public var jobs: Int
    }

    /// By name.
    public var members: [Member]

    public static func read(config: Config) -> AgentRoster {
        let workRoot = Agent.absolute(config.spool) + "/work"
        var members: [Member] = []
        for agent in ((try? FileSystem.entries(of: workRoot)) ?? []).map(\.name) where !agent.hasPrefix(".") {
            let folder = workRoot + "/" + agent
            guard FileSystem.isDirectory(folder) else { continue }
            let jobs = ((try? FileSystem.entries(of: folder)) ?? []).count { Spool.isJobName($0.name) }
            members.append(Member(name: agent, alive: AgentLiveness.isAlive(workFolder: folder), jobs: jobs))
        }
        return AgentRoster(members: members.sorted { $0.name < $1.name })
    }
}
