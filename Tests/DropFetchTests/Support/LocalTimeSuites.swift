import Testing

/// The suites that read the process's local time (`LocalCalendar` reads only `TZ`, and
/// `ScheduleStateTests` sets it for its tests): one at a time, so that no suite computes in a zone
/// another has set meanwhile. Suites elsewhere run beside them as before.
@Suite(.serialized) enum LocalTimeSuites {}
