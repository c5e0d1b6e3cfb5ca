@testable import DropFetch
import Glibc
import Testing

/// The sd_notify(3) messages, their order and their timing, against a listening socket in the
/// test process; times are passed in, so rate limits are checked without waiting.
@Suite("Service notifier")
struct ServiceNotifierTests {
    private let counts = ServiceNotifier.Counts(queued: 3, active: 2, waiting: 1, held: 0)

    @Test("READY=1, then STATUS= at once, then WATCHDOG=1 every half WATCHDOG_USEC", arguments: [false, true])
    func readyStatusWatchdog(abstract: Bool) throws {
        let listener = try NotifyListener(abstract: abstract)
        let notifier = try ServiceNotifier(address: listener.address, watchdogMicroseconds: 400_000)
        #expect(notifier.watchdogInterval == 200)

        notifier.turn(now: 0) { counts }
        #expect(listener.messages().isEmpty, "nothing before READY")
        #expect(notifier.nextDeadline == nil)

        notifier.ready(now: 1000)
        #expect(notifier.nextDeadline == 1000, "the first STATUS= is due with READY=1")
        notifier.turn(now: 1001) { counts }
        #expect(notifier.nextDeadline == 1200)
        notifier.turn(now: 1199) { counts }
        notifier.turn(now: 1200) { counts }
        notifier.turn(now: 1300) { counts }
        notifier.turn(now: 1400) { counts }
        #expect(listener.messages() == [
            "READY=1", "STATUS=3 queued, 2 active, 1 waiting, 0 held", "WATCHDOG=1", "WATCHDOG=1",
        ])
        #expect(notifier.nextDeadline == 1600)
    }

    @Test("STATUS= only when the counts change, at most once a second; the counts are read only then")
    func statusRateLimit() throws {
        let listener = try NotifyListener(abstract: true)
        let notifier = try ServiceNotifier(address: listener.address)
        #expect(notifier.watchdogInterval == nil)
        notifier.ready(now: 0)
        #expect(notifier.nextDeadline == 0, "an idle loop still turns once for the first STATUS=")
        var reads = 0
        var current = counts
        let read = { () -> ServiceNotifier.Counts in
            reads += 1
            return current
        }
        notifier.turn(now: 10, counts: read)
        current.active = 1
        notifier.turn(now: 500, counts: read)
        #expect(reads == 1)
        #expect(notifier.nextDeadline == 1010, "a change seen too soon is sent at the next allowed moment")
        notifier.turn(now: 1010, counts: read)
        notifier.turn(now: 2500, counts: read)
        #expect(reads == 3)
        #expect(notifier.nextDeadline == nil, "nothing pending, no watchdog")
        #expect(listener.messages() == [
            "READY=1", "STATUS=3 queued, 2 active, 1 waiting, 0 held", "STATUS=3 queued, 1 active, 1 waiting, 0 held",
        ])
    }

    @Test("RELOADING=1 carries MONOTONIC_USEC on CLOCK_MONOTONIC; READY=1 ends the reload")
    func reloading() throws {
        let listener = try NotifyListener(abstract: false)
        let notifier = try ServiceNotifier(address: listener.address)
        notifier.ready()
        let before = Self.monotonicMicroseconds()
        notifier.reloading()
        let after = Self.monotonicMicroseconds()
        notifier.ready()
        let messages = listener.messages()
        try #require(messages.count == 3)
        let lines = messages[1].split(separator: "\n")
        #expect(lines.first == "RELOADING=1")
        let stamp = try #require(lines.last.flatMap { UInt64($0.dropFirst("MONOTONIC_USEC=".count)) })
        #expect(lines.last?.hasPrefix("MONOTONIC_USEC=") == true)
        #expect(stamp >= before && stamp <= after)
        #expect(messages[2] == "READY=1")
    }

    @Test("STOPPING=1 is sent once, and nothing after it")
    func stopping() throws {
        let listener = try NotifyListener(abstract: true)
        let notifier = try ServiceNotifier(address: listener.address, watchdogMicroseconds: 2000)
        notifier.ready(now: 0)
        notifier.stopping()
        notifier.stopping()
        notifier.turn(now: 5000) { counts }
        notifier.reloading()
        notifier.ready(now: 6000)
        #expect(listener.messages() == ["READY=1", "STOPPING=1"])
        #expect(notifier.nextDeadline == nil)
    }

    @Test("addresses that are neither /path nor @name, or too long for sun_path, are refused",
          arguments: ["", "@", "/", "relative/socket", "vsock:2:1234", "/" + String(repeating: "a", count: 108),
                      "@" + String(repeating: "b", count: 108)])
    func badAddress(address: String) {
        #expect(throws: SystemError.self) { try ServiceNotifier(address: address) }
    }

    @Test("a path that fills sun_path but for its NUL, and an abstract name that fills it, are accepted")
    func longestAddresses() throws {
        _ = try ServiceNotifier(address: "/" + String(repeating: "a", count: 106))
        _ = try ServiceNotifier(address: "@" + String(repeating: "b", count: 107))
    }

    @Test("a socket nobody listens on does not stop the agent: the messages are dropped")
    func nobodyListening() throws {
        let notifier = try ServiceNotifier(address: "@dropfetch-nobody-\(getpid())", watchdogMicroseconds: 2000)
        notifier.ready(now: 0)
        notifier.turn(now: 10) { counts }
        #expect(notifier.nextDeadline == 11)
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000 + UInt64(spec.tv_nsec) / 1000
    }
}
