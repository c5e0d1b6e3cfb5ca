/// Every agent that has a work folder in the spool and whether it runs, is fenced or is gone
/// (AgentLiveness: its lock and its lease), for the status page and `status`.
public struct AgentRoster: Sendable, Equatable {
    public struct Member: Sendable, Equatable {
        public var name: String
        /// `running`, `fenced` or `gone` (AgentLiveness.State).
        public var state: String
        public var alive: Bool { state != "gone" }
        /// Job files in its work folder.
        public var jobs: Int
    }

    /// By name.
    public var members: [Member]

    public static func read(config: Config) -> AgentRoster {
        let workRoot = Agent.absolute(config.spool) + "/work"
        var members: [Member] = []
        for agent in ((try? FileSystem.entries(of: workRoot)) ?? []).map(\.name) where !agent.hasPrefix(".") {
            let folder = FileSystem.join(workRoot, agent)
            guard FileSystem.isDirectory(folder) else { continue }
            let jobs = ((try? FileSystem.entries(of: folder)) ?? []).count { Spool.isJobName($0.name) }
            let state = AgentLiveness.state(workFolder: folder, now: AgentClock().wallNanoseconds())
            members.append(Member(name: agent, state: state.rawValue, jobs: jobs))
        }
        return AgentRoster(members: members.sorted { $0.name < $1.name })
    }
}
