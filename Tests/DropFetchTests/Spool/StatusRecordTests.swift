@testable import DropFetch
import Foundation
import Testing

@Suite("Status record JSON")
struct StatusRecordTests {
    @Test("the written JSON parses, keeps nulls, escapes control characters and round-trips")
    func roundTrip() throws {
        var record = StatusRecord(job: "a \"quoted\"\n\u{1}.url", state: .failed, className: "iso", priority: -3,
                                  agent: "host-a", submitted: "2026-11-21T22:00:00Z", attempts: 2)
        var download = DownloadStatus(url: "https://***@example.org/ü.iso", file: "/srv/ü.iso", state: .failed)
        download.bytes = 1234
        download.httpStatus = 503
        download.seconds = 1.23456
        download.error = Failure(.httpStatus, "HTTP 503\tunavailable")
        record.downloads = [download]
        record.error = Failure(.httpStatus, "HTTP 503")

        let bytes = record.encoded()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["started"] is NSNull)
        #expect(object["class"] as? String == "iso")
        let entry = try #require((object["downloads"] as? [[String: Any]])?.first)
        #expect(entry["sha256"] is NSNull)
        #expect(entry["http_status"] as? Int == 503)
        #expect(entry["resumed_from"] as? Int == 0)
        #expect(entry["seconds"] as? Double == 1.235)
        #expect(!String(decoding: bytes, as: UTF8.self).contains("\u{1}"))

        let decoded = try #require(StatusRecord.decode(bytes))
        #expect(decoded.job == record.job)
        #expect(decoded.downloads.first?.error == download.error)
        #expect(decoded.downloads.first?.url == download.url)
        #expect(decoded.priority == -3)
        #expect(decoded.error == record.error)
    }

    @Test("ignored_options comes right after attempts when there are some, and is absent otherwise")
    func ignoredOptions() throws {
        var record = StatusRecord(job: "a.url", state: .done, className: "default", priority: 0, agent: "h",
                                  submitted: "2026-11-21T22:00:00Z", attempts: 1)
        let plain = String(decoding: record.encoded(), as: UTF8.self)
        #expect(!plain.contains("ignored_options"))
        #expect(StatusRecord.decode(record.encoded())?.ignoredOptions == nil)
        record.ignoredOptions = []
        #expect(!String(decoding: record.encoded(), as: UTF8.self).contains("ignored_options"))

        record.ignoredOptions = ["split", "max-connection-per-server", "we\"ird"]
        let text = String(decoding: record.encoded(), as: UTF8.self)
        let attempts = try #require(text.range(of: "\"attempts\": 1,\n  \"ignored_options\": ["))
        let downloads = try #require(text.range(of: "\"downloads\""))
        #expect(attempts.upperBound < downloads.lowerBound, "\(text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(record.encoded())) as? [String: Any])
        #expect(object["ignored_options"] as? [String] == ["split", "max-connection-per-server", "we\"ird"])
        #expect(StatusRecord.decode(record.encoded())?.ignoredOptions == record.ignoredOptions)
    }

    @Test("a running download shows bytes_per_second, rate_limit and connections (null when none); a finished one only connections, the most it had")
    func speedAndLimit() throws {
        var record = StatusRecord(job: "a.url", state: .running, className: "default", priority: 0,
                                  agent: "host-a", submitted: "2026-11-21T22:00:00Z", attempts: 1)
        var limited = DownloadStatus(url: "http://example.org/a", file: "/srv/a", state: .running)
        limited.bytesPerSecond = 204_000
        limited.rateLimit = 204_800
        limited.connections = 1
        var unlimited = DownloadStatus(url: "http://example.org/b", file: "/srv/b", state: .running)
        unlimited.bytesPerSecond = 9_000_000
        var done = DownloadStatus(url: "http://example.org/c", file: "/srv/c", state: .done)
        done.bytesPerSecond = 1
        done.rateLimit = 2
        done.connections = 3
        record.downloads = [limited, unlimited, done]

        let bytes = record.encoded()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let entries = try #require(object["downloads"] as? [[String: Any]])
        #expect(entries[0]["bytes_per_second"] as? Int == 204_000)
        #expect(entries[0]["rate_limit"] as? Int == 204_800)
        #expect(entries[1]["bytes_per_second"] as? Int == 9_000_000)
        #expect(entries[1]["rate_limit"] is NSNull)
        #expect(entries[2]["bytes_per_second"] == nil)
        #expect(entries[2]["rate_limit"] == nil)
        #expect(entries[0]["connections"] as? Int == 1)
        #expect(entries[1]["connections"] is NSNull)
        // A finished download says the most connections it had open (issue 36, DESIGN §10).
        #expect(entries[2]["connections"] as? Int == 3)

        let decoded = try #require(StatusRecord.decode(bytes))
        #expect(decoded.downloads[0].rateLimit == 204_800)
        #expect(decoded.downloads[0].bytesPerSecond == 204_000)
        #expect(decoded.downloads[1].rateLimit == nil)
        #expect(decoded.downloads[0].connections == 1)
    }
}
