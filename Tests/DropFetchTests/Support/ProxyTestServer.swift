import Foundation

/// The forward proxy of `ProtocolServerScripts.proxy` on 127.0.0.1 (a random port): it answers
/// absolute URLs itself from `files`, so a "public" target needs no network.
final class ProxyTestServer: @unchecked Sendable {
    let folder: String
    let port: Int
    private let server: ScriptServer

    init(files: [String: [UInt8]], redirects: [String: String] = [:]) throws {
        folder = try ScriptServer.makeFolder("proxy")
        try FileManager.default.createDirectory(atPath: folder + "/files", withIntermediateDirectories: true)
        for (name, body) in files { try Data(body).write(to: URL(fileURLWithPath: folder + "/files/" + name)) }
        (server, port) = try ScriptServer.python(ProtocolServerScripts.proxy, name: "proxy",
                                                 settings: ["root": folder + "/files", "redirects": redirects], folder: folder)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// `PROXY GET <absolute URL>` lines, one per request the proxy answered.
    var requests: [String] { ScriptServer.events(folder, "proxy") }
}
