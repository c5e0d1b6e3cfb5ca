import DropFetch
import Foundation
import Testing

/// Hostile servers against the real binary (docs/status-files.md, docs/config.md, invariants 2 and 4): redirects to
/// other schemes and hosts, lying sizes, error bodies, Content-Disposition names, credentials and
/// control characters in answers, size and time limits, and `block_private_addresses`. Each case
/// is a row of docs/hostile-inputs.md; the harness is in `HostileInputTests`.
@Suite("Hostile input: servers")
struct HostileInputServerTests {
    typealias Case = HostileInputTests.Case
    typealias Context = HostileInputTests.Context

    @Test("hostile answers are filed as docs/hostile-inputs.md says; no secret leaks; the good job is done")
    func serverAnswers() throws {
        try HostileInputTests.run(Self.answerCases, config: "content_disposition: true\nfile_mode: \"0640\"\nmax_redirects: 3\n")
    }

    @Test("size and time limits stop endless, huge and slow bodies; the good job is done")
    func limits() throws {
        try HostileInputTests.run(Self.limitCases, config: "limits: { max_file_size: 1MB, timeout: 1s }\n")
    }

    @Test("block_private_addresses refuses loopback, private and link-local addresses before connecting")
    func blockedAddresses() throws {
        let context = try HostileInputTests.run(Self.blockedCases, config: "block_private_addresses: true\n", goodJob: false)
        #expect(context.server.requests.isEmpty, "\(context.server.requests)")
        // Every test host is a loopback address, so the good job runs next, with the block lifted.
        let fixture = context.fixture
        let sentinel = HostileInputTests.Tree.walk(context.sentinel)
        try fixture.writeConfig("")
        context.serve("/good/good.bin", as: "good.bin")
        try context.drop("good.url", context.url("/good/good.bin") + "\n")
        #expect(try fixture.runOnce() == 0)
        let good = Case(id: "good", job: "good.url", outcome: .done, files: ["good.bin"], setup: { _ in })
        try HostileInputTests.verify(good, in: context)
        let changed = HostileInputTests.Tree.changes(from: sentinel, to: HostileInputTests.Tree.walk(context.sentinel))
        #expect(changed.isEmpty, "the sentinel folder changed: \(changed)")
        #expect(HostileInputTests.Tree.names(fixture.destination) == ["good.bin"])
    }

    /// A check that the job was refused before any request: one attempt, nothing reached the server.
    static func refusedBeforeConnecting(_ id: String) -> @Sendable (Context) throws -> Void {
        { c in
            let status = try c.fixture.status("failed", id + ".url")
            #expect(status.attempts == 1, "\(id): retried \(status.attempts) times")
            #expect(status.error?.message.contains("block_private_addresses") == true, "\(id): \(status.error?.message ?? "")")
            #expect(c.server.requests.allSatisfy { !$0.path.hasPrefix("/\(id)/") }, "\(id): the server was reached")
        }
    }

    /// A check that only the first hop of a refused redirect was requested, once (not retried).
    static func firstHopOnly(_ id: String) -> @Sendable (Context) throws -> Void {
        { c in
            #expect(c.server.requests.filter { $0.path.contains(id) }.map(\.path) == ["/hop/\(id)"],
                    "\(id): \(c.server.requests.map(\.path))")
        }
    }

    /// Serves `body` at `path` as a 200 whose extra `headers` the case is about.
    static func serveText(_ c: Context, _ path: String, headers: [(String, String)], body: String, as name: String) {
        c.server.setFaults(path, [.status(code: 200, headers: headers, body: body)])
        c.bodies[name] = Array(body.utf8)
    }

    // MARK: - Answers (S)

    static let answerCases: [Case] = [
        Case(id: "S01", job: "S01.url", outcome: .failed(.unsupportedProtocol), setup: { c in
            let passwd = (try? String(contentsOfFile: "/etc/passwd", encoding: .utf8))?.split(separator: "\n").first
            if let passwd { c.secrets.append(String(passwd)) }
            c.server.setFaults("/hop/S01", [.redirect(to: "file:///etc/passwd")])
            try c.drop("S01.url", c.url("/hop/S01") + "\n")
        }, check: firstHopOnly("S01")),
        Case(id: "S02", job: "S02.url", outcome: .failed(.unsupportedProtocol), setup: { c in
            c.server.setFaults("/hop/S02", [.redirect(to: "ftp://\(c.host)/S02.bin")])
            try c.drop("S02.url", c.url("/hop/S02") + "\n")
        }, check: firstHopOnly("S02")),
        Case(id: "S03", job: "S03.url", outcome: .failed(.unsupportedProtocol), setup: { c in
            c.server.setFaults("/hop/S03", [.redirect(to: "gopher://\(c.host)/1S03")])
            try c.drop("S03.url", c.url("/hop/S03") + "\n")
        }, check: firstHopOnly("S03")),
        Case(id: "S04", job: "S04.url", outcome: .failed(.redirect), setup: { c in
            c.server.setFaults("/S04/S04.bin", [.redirect(to: "/S04/S04.bin")])
            try c.drop("S04.url", c.url("/S04/S04.bin") + "\n")
        }),
        Case(id: "S05", job: "S05.url", outcome: .failed(.redirect), setup: { c in
            c.server.setFaults("/S05/S05.bin", [.redirect(to: "/S05/h1")])
            for hop in 1...3 { c.server.setFaults("/S05/h\(hop)", [.redirect(to: "/S05/h\(hop + 1)")]) }
            c.serve("/S05/h4", as: nil)
            try c.drop("S05.url", c.url("/S05/S05.bin") + "\n")
        }, check: { c in
            #expect(c.server.requests(to: "/S05/h4").isEmpty, "S05: followed a fourth redirect")
        }),
        Case(id: "S06", job: "S06.url", outcome: .done, files: ["S06.bin"], setup: { c in
            c.server.setFaults("/S06/S06.bin", [.redirect(to: "/S06/h1")])
            for hop in 1...2 { c.server.setFaults("/S06/h\(hop)", [.redirect(to: "/S06/h\(hop + 1)", code: 301 + hop)]) }
            c.serve("/S06/h3", as: "S06.bin")
            try c.drop("S06.url", c.url("/S06/S06.bin") + "\n")
        }),
        Case(id: "S07", job: "S07.url", outcome: .failed(.tooLarge), setup: { c in
            c.serve("/S07/S07.bin", as: nil, faults: [.lyingContentLength(1_000_000_000_000_000)])
            try c.drop("S07.url", c.url("/S07/S07.bin") + "\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "S07.url")
            #expect(status.downloads.first?.bytes == 0, "S07: \(status.downloads)")
            #expect(status.attempts == 1)
        }),
        Case(id: "S08", job: "S08.url", outcome: .done, files: ["S08.bin"], setup: { c in
            c.serve("/S08/S08.bin", as: "S08.bin", size: 300_000,
                    faults: [.times(1, .dropAfter(bytes: 100_000)), .contentRangeOn200])
            try c.drop("S08.url", c.url("/S08/S08.bin") + "\n")
        }, check: { c in
            let requests = c.server.completedRequests().filter { $0.path == "/S08/S08.bin" }
            #expect(requests.count == 2, "S08: \(requests)")
            #expect(requests.last?.header("Range") != nil && requests.last?.status == 200, "S08: not a resume answered by 200")
        }),
        Case(id: "S09", job: "S09.url", outcome: .failed(.httpStatus), setup: { c in
            c.server.setFaults("/S09/S09.bin", [.status(code: 404, body: "<html>S09 error body, not data</html>")])
            try c.drop("S09.url", c.url("/S09/S09.bin") + "\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "S09.url")
            #expect(status.downloads.first?.httpStatus == 404)
        }),
        Case(id: "S10", job: "S10.url", outcome: .failed(.httpStatus), setup: { c in
            c.server.setFaults("/S10/S10.bin", [.status(code: 500, body: "<html>S10 error body, not data</html>")])
            try c.drop("S10.url", c.url("/S10/S10.bin") + "\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "S10.url")
            #expect(status.downloads.first?.httpStatus == 500 && status.attempts == 3, "S10: \(status)")
        }),
        Case(id: "S11", job: "S11.url", outcome: .done, files: ["_.._evil"], setup: { c in
            serveText(c, "/S11/S11.bin", headers: [("Content-Disposition", "attachment; filename=\"../../evil\"")],
                      body: "S11 body\n", as: "_.._evil")
            c.escapeProbes.append(URL(fileURLWithPath: c.fixture.destination + "/../../evil").standardized.path)
            try c.drop("S11.url", c.url("/S11/S11.bin") + "\n")
        }),
        Case(id: "S12", job: "S12.url", outcome: .done, files: ["_.._evil2"], setup: { c in
            serveText(c, "/S12/S12.bin", headers: [("Content-Disposition", "attachment; filename*=UTF-8''..%2F..%2Fevil2")],
                      body: "S12 body\n", as: "_.._evil2")
            c.escapeProbes.append(URL(fileURLWithPath: c.fixture.destination + "/../../evil2").standardized.path)
            try c.drop("S12.url", c.url("/S12/S12.bin") + "\n")
        }),
        Case(id: "S13", job: "S13.url", outcome: .done, files: ["_etc_cron.d_S13"], setup: { c in
            serveText(c, "/S13/S13.bin", headers: [("Content-Disposition", "attachment; filename=\"/etc/cron.d/S13\"")],
                      body: "S13 body\n", as: "_etc_cron.d_S13")
            c.escapeProbes.append("/etc/cron.d/S13")
            try c.drop("S13.url", c.url("/S13/S13.bin") + "\n")
        }),
        Case(id: "S14", job: "S14.url", outcome: .done, files: ["S14_[31m_.txt"], setup: { c in
            serveText(c, "/S14/S14.bin", headers: [("Content-Disposition", "attachment; filename*=UTF-8''S14%1b%5b31m%07.txt")],
                      body: "S14 body\n", as: "S14_[31m_.txt")
            try c.drop("S14.url", c.url("/S14/S14.bin") + "\n")
        }),
        Case(id: "S15", job: "S15.url", outcome: .done, files: ["S15rc"], setup: { c in
            serveText(c, "/S15/S15.bin", headers: [("Content-Disposition", "attachment; filename=\".S15rc\"")],
                      body: "S15 body\n", as: "S15rc")
            try c.drop("S15.url", c.url("/S15/S15.bin") + "\n")
        }),
        Case(id: "S16", job: "S16.url", outcome: .done, files: ["S16.bin"], setup: { c in
            serveText(c, "/S16/S16.bin", headers: [("Content-Disposition", "attachment; filename=\"..\"")],
                      body: "S16 body\n", as: "S16.bin")
            try c.drop("S16.url", c.url("/S16/S16.bin") + "\n")
        }),
        Case(id: "S17", job: "S17.url", outcome: .done, files: [HostileInputTests.longName("S17", bytes: 255)], setup: { c in
            let offered = HostileInputTests.longName("S17", bytes: 300)
            serveText(c, "/S17/S17.bin", headers: [("Content-Disposition", "attachment; filename=\"\(offered)\"")],
                      body: "S17 body\n", as: HostileInputTests.longName("S17", bytes: 255))
            try c.drop("S17.url", c.url("/S17/S17.bin") + "\n")
        }),
        Case(id: "S18", job: "S18.url", outcome: .done, files: ["S18.bin"], setup: { c in
            c.serve("/S18/S18.bin", as: "S18.bin")
            try c.drop("S18.url", c.url("/S18/S18.bin") + "\n")
        }, check: { c in
            #expect(HostileInputTests.Tree.mode(of: c.fixture.destination + "/S18.bin") == 0o640, "S18: file_mode not applied")
            let data = HostileInputTests.Tree.walk(c.fixture.destination)
                .filter { $0.value.type == S_IFREG && !$0.key.hasPrefix(".") }
            #expect(data.allSatisfy { $0.value.mode == 0o640 }, "S18: \(data.filter { $0.value.mode != 0o640 }.keys.sorted())")
        }),
        Case(id: "S19", job: "S19.url", outcome: .done, files: ["S19.bin"], setup: { c in
            c.secrets.append("secret")
            c.serve("/S19/S19.bin", as: "S19.bin")
            try c.drop("S19.url", "http://user:secret@\(c.host)/S19/S19.bin\n")
        }, check: { c in
            #expect(c.server.requests(to: "/S19/S19.bin").first?.header("Authorization")?.hasPrefix("Basic ") == true,
                    "S19: the credentials were not used")
            let status = try c.fixture.status("done", "S19.url")
            #expect(status.downloads.first?.url == "http://***@\(c.host)/S19/S19.bin")
        }),
        Case(id: "S20", job: "S20.url", outcome: .failed(.httpStatus), setup: { c in
            c.secrets.append("secret")
            c.server.setFaults("/S20/S20.bin", [.status(code: 404)])
            try c.drop("S20.url", "http://user:secret@\(c.host)/S20/S20.bin\n")
        }),
        Case(id: "S21", job: "S21.url", outcome: .failed(.network), files: [".S21.bin.part", ".S21.bin.part.json"], setup: { c in
            c.secrets.append("secret")
            // Each try adds less than the 64 KiB that makes an attempt free (issue 36): it fails, data kept.
            c.serve("/S21/S21.bin", as: nil, size: 5_000_000, faults: [.dropAfter(bytes: 50_000)])
            try c.drop("S21.url", "http://user:secret@\(c.host)/S21/S21.bin\n")
        }),
        Case(id: "S22", job: "S22.url", outcome: .done, files: ["S22.bin"], setup: { c in
            c.secrets.append("topsecret")
            let other = try c.otherServer()
            c.serve("/S22/S22.bin", as: "S22.bin", on: other)
            c.server.setFaults("/S22/start", [.redirect(to: other.url("/S22/S22.bin"))])
            try c.drop("S22.url", "\(c.url("/S22/start"))\n  header=Authorization: Bearer topsecret\n  out=S22.bin\n")
        }, check: { c in
            let other = try c.otherServer()
            #expect(c.server.requests(to: "/S22/start").first?.header("Authorization") == "Bearer topsecret")
            let moved = other.requests(to: "/S22/S22.bin")
            #expect(!moved.isEmpty && moved.allSatisfy { $0.header("Authorization") == nil }, "S22: \(moved.map(\.headers))")
        }),
        Case(id: "S23", job: "S23.url", outcome: .done, files: ["S23.bin"], setup: { c in
            c.secrets.append("cookiesecret")
            let other = try c.otherServer()
            c.serve("/S23/S23.bin", as: "S23.bin", on: other)
            c.server.setFaults("/S23/start", [.redirect(to: other.url("/S23/S23.bin"))])
            try c.drop("S23.url", "\(c.url("/S23/start"))\n  header=Cookie: session=cookiesecret\n  out=S23.bin\n")
        }, check: { c in
            let other = try c.otherServer()
            #expect(c.server.requests(to: "/S23/start").first?.header("Cookie") == "session=cookiesecret")
            let moved = other.requests(to: "/S23/S23.bin")
            #expect(!moved.isEmpty && moved.allSatisfy { $0.header("Cookie") == nil }, "S23: \(moved.map(\.headers))")
        }),
        Case(id: "S24", job: "S24.url", outcome: .failed(.httpStatus), setup: { c in
            let answer = "HTTP/1.1 404 \u{1B}[2J\u{1B}[31mpwned\u{07}\r\nContent-Type: text/html\r\nContent-Length: 11\r\n"
                + "X-Evil: \u{1B}]0;owned\u{07}\r\nConnection: close\r\n\r\nerror page\n"
            let responder = try CannedResponder(answer: Array(answer.utf8))
            c.retained.append(responder)
            try c.drop("S24.url", "http://127.0.0.1:\(responder.port)/S24/S24.bin\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "S24.url")
            #expect(status.downloads.first?.httpStatus == 404)
        }),
        Case(id: "S25", job: "S25.url", outcome: .done, files: ["S25.bin"], setup: { c in
            serveText(c, "/S25/S25.bin", headers: [("X-Evil", "\u{1B}]0;owned\u{07}"), ("ETag", "\"\u{1B}[31m\""),
                                                   ("Last-Modified", "\u{1B}[2J\u{7F}")],
                      body: "S25 body\n", as: "S25.bin")
            try c.drop("S25.url", c.url("/S25/S25.bin") + "\n")
        }),
        Case(id: "S26", job: "S26.url", outcome: .failed(.redirect), setup: { c in
            c.server.setFaults("/S26/S26.bin", [.redirect(to: "/S26/\u{1B}[31mred\u{07}.bin")])
            try c.drop("S26.url", c.url("/S26/S26.bin") + "\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "S26.url")
            #expect(status.error?.message.contains("Location") == true, "S26: \(status.error?.message ?? "")")
        }),
        Case(id: "S27", job: "S27.url", outcome: .failed(.network), setup: { c in
            let huge = String(repeating: "h", count: 300_000)
            serveText(c, "/S27/S27.bin", headers: [("X-Huge", huge)], body: "S27\n", as: "S27-none")
            try c.drop("S27.url", c.url("/S27/S27.bin") + "\n")
        }),
        Case(id: "S28", job: "S28.url", outcome: .done, files: ["S28.bin"], setup: { c in
            c.secrets.append("apisecret")
            let other = try c.otherServer()
            c.serve("/S28/S28.bin", as: "S28.bin", on: other)
            c.server.setFaults("/S28/start", [.redirect(to: other.url("/S28/S28.bin"))])
            try c.drop("S28.url", "\(c.url("/S28/start"))\n  header=X-Api-Key: apisecret\n  out=S28.bin\n")
        }, check: { c in
            #expect(c.server.requests(to: "/S28/start").first?.header("X-Api-Key") == "apisecret")
            let moved = try c.otherServer().requests(to: "/S28/S28.bin")
            #expect(!moved.isEmpty && moved.allSatisfy { $0.header("X-Api-Key") == nil }, "S28: \(moved.map(\.headers))")
        }),
        Case(id: "S29", job: "S29.url", outcome: .done, files: ["S29.bin"], setup: { c in
            c.secrets.append("hpsecret")
            let other = try c.otherServer()
            c.serve("/S29/S29.bin", as: "S29.bin", on: other)
            c.server.setFaults("/S29/start", [.redirect(to: other.url("/S29/S29.bin"), code: 307)])
            try c.drop("S29.url", "\(c.url("/S29/start"))\n  http-user=u\n  http-passwd=hpsecret\n  out=S29.bin\n")
        }, check: { c in
            #expect(c.server.requests(to: "/S29/start").first?.header("Authorization")?.hasPrefix("Basic ") == true)
            let moved = try c.otherServer().requests(to: "/S29/S29.bin")
            #expect(!moved.isEmpty && moved.allSatisfy { $0.header("Authorization") == nil }, "S29: \(moved.map(\.headers))")
        }),
        Case(id: "S30", job: "S30.url", outcome: .done, files: ["S30.bin"], setup: { c in
            c.secrets.append("secret")
            let other = try c.otherServer()
            c.serve("/S30/S30.bin", as: "S30.bin", on: other)
            c.server.setFaults("/S30/start", [.redirect(to: other.url("/S30/S30.bin"))])
            try c.drop("S30.url", "http://user:secret@\(c.host)/S30/start\n  out=S30.bin\n")
        }, check: { c in
            #expect(c.server.requests(to: "/S30/start").first?.header("Authorization")?.hasPrefix("Basic ") == true)
            let moved = try c.otherServer().requests(to: "/S30/S30.bin")
            #expect(!moved.isEmpty && moved.allSatisfy { $0.header("Authorization") == nil }, "S30: \(moved.map(\.headers))")
        }),
        Case(id: "S31", job: "S31.url", outcome: .done, files: ["S31.bin"], setup: { c in
            c.secrets.append("samesecret")
            c.serve("/S31/S31.bin", as: "S31.bin")
            c.server.setFaults("/S31/start", [.redirect(to: "/S31/S31.bin", code: 301)])
            try c.drop("S31.url", "\(c.url("/S31/start"))\n  header=X-Api-Key: samesecret\n  out=S31.bin\n")
        }, check: { c in
            let requests = c.server.requests.filter { $0.path.hasPrefix("/S31/") }
            #expect(requests.map(\.path) == ["/S31/start", "/S31/S31.bin"], "S31: \(requests)")
            #expect(requests.allSatisfy { $0.header("X-Api-Key") == "samesecret" }, "S31: the same origin lost the key")
        }),
        Case(id: "S32", job: "S32.url", outcome: .done, files: ["S32.bin"], setup: { c in
            c.secrets.append("portsecret")
            let port = try SecondPort()
            c.retained.append(port)
            c.serve("/S32/S32.bin", as: "S32.bin", on: port.server)
            c.server.setFaults("/S32/start", [.redirect(to: port.server.url("/S32/S32.bin"))])
            try c.drop("S32.url", "\(c.url("/S32/start"))\n  header=X-Api-Key: portsecret\n  out=S32.bin\n")
        }, check: { c in
            #expect(c.server.requests(to: "/S32/start").first?.header("X-Api-Key") == "portsecret")
            let moved = c.retained.compactMap { ($0 as? SecondPort)?.server.requests(to: "/S32/S32.bin") }.joined()
            #expect(!moved.isEmpty && moved.allSatisfy { $0.header("X-Api-Key") == nil }, "S32: \(moved.map(\.headers))")
        }),
        Case(id: "S33", job: "S33.url", outcome: .done, files: ["S33.bin"], setup: { c in
            c.secrets.append("backsecret")
            let other = try c.otherServer()
            c.serve("/S33/S33.bin", as: "S33.bin")
            c.server.setFaults("/S33/start", [.redirect(to: other.url("/S33/away"))])
            other.setFaults("/S33/away", [.redirect(to: c.url("/S33/S33.bin"), code: 303)])
            try c.drop("S33.url", "\(c.url("/S33/start"))\n  header=X-Api-Key: backsecret\n  out=S33.bin\n")
        }, check: { c in
            let home = c.server.requests.filter { $0.path.hasPrefix("/S33/") }
            #expect(home.map(\.path) == ["/S33/start", "/S33/S33.bin"] && home.allSatisfy { $0.header("X-Api-Key") == "backsecret" },
                    "S33: \(home.map(\.headers))")
            let away = try c.otherServer().requests(to: "/S33/away")
            #expect(away.count == 1 && away.allSatisfy { $0.header("X-Api-Key") == nil }, "S33: \(away.map(\.headers))")
        }),
    ]

    // MARK: - Limits (L)

    static let limitCases: [Case] = [
        Case(id: "L01", job: "L01.url", outcome: .failed(.tooLarge), setup: { c in
            c.server.setFaults("/L01/L01.bin", [.endlessBody])
            try c.drop("L01.url", c.url("/L01/L01.bin") + "\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "L01.url")
            #expect(status.attempts == 1)
        }),
        Case(id: "L02", job: "L02.url", outcome: .failed(.timeout), files: [".L02.bin.part", ".L02.bin.part.json"], setup: { c in
            c.server.setFaults("/L02/L02.bin", [.endlessBody, .drip(bytesPerChunk: 16, interval: .milliseconds(50))])
            try c.drop("L02.url", c.url("/L02/L02.bin") + "\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "L02.url")
            #expect(status.attempts == 3, "L02: \(status.attempts) attempts")
        }),
        Case(id: "L03", job: "L03.url", outcome: .failed(.tooLarge), setup: { c in
            c.serve("/L03/L03.bin", as: nil, size: 1_048_577)
            try c.drop("L03.url", c.url("/L03/L03.bin") + "\n")
        }, check: { c in
            let status = try c.fixture.status("failed", "L03.url")
            #expect(status.downloads.first?.bytes == 0)
        }),
        Case(id: "L04", job: "L04.url", outcome: .done, files: ["L04.bin"], setup: { c in
            c.serve("/L04/L04.bin", as: "L04.bin", size: 1_048_576)
            try c.drop("L04.url", c.url("/L04/L04.bin") + "\n")
        }),
    ]

    // MARK: - block_private_addresses (B)

    static let blockedCases: [Case] = [
        Case(id: "B01", job: "B01.url", outcome: .failed(.blocked), setup: { c in
            c.serve("/B01/B01.bin", as: nil)
            try c.drop("B01.url", c.url("/B01/B01.bin") + "\n")
        }, check: refusedBeforeConnecting("B01")),
        Case(id: "B02", job: "B02.url", outcome: .failed(.blocked), setup: { c in
            try c.drop("B02.url", "http://[::1]:\(c.server.port)/B02/B02.bin\n")
        }, check: refusedBeforeConnecting("B02")),
        Case(id: "B03", job: "B03.url", outcome: .failed(.blocked), setup: { c in
            c.serve("/B03/B03.bin", as: nil)
            try c.drop("B03.url", "http://localhost:\(c.server.port)/B03/B03.bin\n")
        }, check: refusedBeforeConnecting("B03")),
        Case(id: "B04", job: "B04.url", outcome: .failed(.blocked), setup: { c in
            c.serve("/B04/B04.bin", as: nil)
            try c.drop("B04.url", "http://[::ffff:127.0.0.1]:\(c.server.port)/B04/B04.bin\n")
        }, check: refusedBeforeConnecting("B04")),
        Case(id: "B05", job: "B05.url", outcome: .failed(.blocked), setup: { c in
            c.serve("/B05/B05.bin", as: nil)
            try c.drop("B05.url", "http://0x7f.1:\(c.server.port)/B05/B05.bin\n")
        }, check: refusedBeforeConnecting("B05")),
        Case(id: "B06", job: "B06.url", outcome: .failed(.blocked), setup: { c in
            c.server.setFaults("/B06/B06.bin", [.redirect(to: "http://127.0.0.1:\(c.server.port)/B06/next")])
            c.serve("/B06/next", as: nil)
            try c.drop("B06.url", c.url("/B06/B06.bin") + "\n")
        }, check: refusedBeforeConnecting("B06")),
        Case(id: "B07", job: "B07.url", outcome: .failed(.blocked), setup: { c in
            try c.drop("B07.url", "http://169.254.169.254/latest/meta-data/B07\n")
        }, check: refusedBeforeConnecting("B07")),
        Case(id: "B08", job: "B08.url", outcome: .failed(.blocked), setup: { c in
            try c.drop("B08.url", "http://10.255.255.1:\(c.server.port)/B08/B08.bin\n")
        }, check: refusedBeforeConnecting("B08")),
    ]
}

/// A listener on 127.0.0.1 that answers every request with the same raw bytes and closes, for
/// answers `TestHTTPServer` cannot give (a status line with control characters, RFC 9112 §4).
private final class CannedResponder: Sendable {
    let port: Int
    private let listener: Int32

    init(answer: [UInt8]) throws {
        let listener = try TestHTTPServer.Socket.listen(host: "127.0.0.1")
        self.listener = listener
        port = TestHTTPServer.Socket.localAddress(listener).port
        let thread = Thread {
            while let fd = try? TestHTTPServer.Socket.accept(listener) {
                var head: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                while !head.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)), head.count < 1 << 20 {
                    let count = (try? buffer.withUnsafeMutableBytes { try TestHTTPServer.Socket.receive(fd, into: $0) }) ?? 0
                    if count <= 0 { break }
                    head += buffer[..<count]
                }
                try? answer.withUnsafeBytes { try TestHTTPServer.Socket.sendAll(fd, $0) }
                TestHTTPServer.Socket.close(fd)
            }
            TestHTTPServer.Socket.close(listener)
        }
        thread.name = "CannedResponder :\(port)"
        thread.start()
    }

    /// Wakes the accept thread, which then closes the listener and ends.
    deinit { TestHTTPServer.Socket.shutdownBoth(listener) }
}

/// A second server on 127.0.0.1 (another port: another origin), kept apart from
/// `Context.otherServer()`, which takes the first `TestHTTPServer` it retains.
private final class SecondPort {
    let server: TestHTTPServer

    init() throws { server = try TestHTTPServer() }
}
