import Testing
@testable import DropFetch

/// `schedule:` and `quota:` in the config: what is read, and where an error points.
@Suite struct ScheduleConfigTests {
    private func error(_ yaml: String) -> ConfigError? {
        do {
            _ = try ConfigLoader.parse(yaml, file: "c.yaml")
            return nil
        } catch {
            return error
        }
    }

    @Test func readsWindowsAndQuotas() throws {
        let config = try ConfigLoader.parse("""
            schedule:
              - days: Mon-Fri
                time: "08:00-18:00"
                rate_limit: 1MB
                concurrency: 2
                classes: { iso: { rate_limit: 200KB, max_active: 1 } }
              - days: Sat,Sun
                time: 22:00-06:00
                pause: new
              - days: Fri-Mon
                time: "12:00-24:00"
                pause: true
            quota:
              - { period: monthly, bytes: 500GB }
              - { period: daily, bytes: 10GB, class: iso, running: pause }
            classes:
              - name: iso
                match: { url: "*.iso" }
            """, file: "c.yaml")
        #expect(config.schedule.count == 3)
        let day = config.schedule[0]
        #expect(day.days == [1, 2, 3, 4, 5])
        #expect(day.start == 480 && day.end == 1080 && !day.crossesMidnight)
        #expect(day.rateLimit == 1 << 20 && day.concurrency == 2)
        #expect(day.classes["iso"] == Config.ScheduleWindow.ClassLimits(rateLimit: 200 << 10, maxActive: 1))
        #expect(day.label == "Mon-Fri 08:00-18:00")
        #expect(config.schedule[1].days == [0, 6] && config.schedule[1].crossesMidnight && config.schedule[1].pause == .new)
        #expect(config.schedule[2].days == [5, 6, 0, 1] && config.schedule[2].end == 1440 && config.schedule[2].pause == .all)
        #expect(config.quotas == [Config.Quota(period: .monthly, bytes: 500 << 30),
                                  Config.Quota(period: .daily, bytes: 10 << 30, className: "iso", running: .pause)])
    }

    @Test(arguments: [
        ("schedule:\n  - days: Mon-Fry\n    time: 08:00-09:00\n", 2, 11, "schedule[0].days", "unknown day 'Fry'"),
        ("schedule:\n  - time: \"25:00-26:00\"\n", 2, 11, "schedule[0].time", "there is no time 25:00"),
        ("schedule:\n  - time: 08:60-09:00\n", 2, 11, "schedule[0].time", "there is no time 08:60"),
        ("schedule:\n  - time: 8-9\n", 2, 11, "schedule[0].time", "expected a time such as 08:00"),
        ("schedule:\n  - time: 08:00-08:00\n", 2, 11, "schedule[0].time", "starts and ends at the same time"),
        ("schedule:\n  - days: daily\n", 2, 5, "schedule[0]", "needs a time"),
        ("schedule:\n  - time: 01:00-02:00\n    pause: maybe\n", 3, 12, "schedule[0].pause", "expected true"),
        ("schedule:\n  - time: 01:00-02:00\n    classes: { iso: { max_active: 1 } }\n", 3, 16, "schedule[0].classes.iso", "unknown class 'iso'"),
        ("schedule:\n  - time: 01:00-02:00\n    colour: red\n", 3, 5, "schedule[0].colour", "unknown key 'colour'"),
        ("quota:\n  - { period: daily, bytes: 1GB, class: iso }\n", 2, 41, "quota[0].class", "unknown class 'iso'"),
        ("quota:\n  - { period: yearly, bytes: 1GB }\n", 2, 15, "quota[0].period", "expected one of daily, weekly, monthly"),
        ("quota:\n  - { period: daily }\n", 2, 5, "quota[0]", "needs bytes"),
        ("quota:\n  - { period: daily, bytes: 1GB }\n  - { period: daily, bytes: 2GB }\n", 3, 5, "quota[1]", "already set"),
    ])
    func refusesWithPlace(yaml: String, line: Int, column: Int, keyPath: String, message: String) throws {
        let found = try #require(error(yaml))
        #expect(found.line == line && found.column == column, "\(found)")
        #expect(found.keyPath == keyPath, "\(found)")
        #expect(found.message.contains(message), "\(found)")
        #expect(found.description.hasPrefix("c.yaml:\(line):\(column): "))
    }

    @Test func classesDefinedLaterAndDefaultAreKnown() throws {
        let config = try ConfigLoader.parse("""
            quota: [{ period: weekly, bytes: 1MB, class: default }]
            schedule: [{ time: "01:00-02:00", classes: { late: { rate_limit: 0 } } }]
            classes: [{ name: late }]
            """, file: "c.yaml")
        #expect(config.quotas.first?.className == "default")
        #expect(config.schedule.first?.classes["late"]?.rateLimit == 0)
    }
}
