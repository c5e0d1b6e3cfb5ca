import DropFetch
import Glibc

/// `dropfetch status --watch`: the status text again every second until SIGINT or SIGTERM, then
/// exit 0. On a terminal each frame replaces the last in place (home, lines, erase the rest);
/// into a pipe or a file the frames follow one another, without escape codes.
struct StatusWatch {
    let config: Config
    /// Seconds between two frames.
    var interval = 1

    func run() {
        let terminal = isatty(1) == 1
        // main.swift blocked these for every thread: they are waited for here, not delivered.
        var stops = sigset_t()
        sigemptyset(&stops)
        for signal in [SIGINT, SIGTERM] { sigaddset(&stops, signal) }
        var first = true
        while true {
            let header = "dropfetch status at \(Timestamp.local(seconds: Int64(time(nil)))), every \(interval)s (Ctrl-C to stop)"
            let text = header + "\n\n" + SpoolStatus.read(config: config).text()
            let frame: String
            if terminal {
                // Each line overwrites the last frame's and erases what that left to its right.
                frame = (first ? "\u{1B}[H\u{1B}[2J" : "\u{1B}[H")
                    + text.split(separator: "\n", omittingEmptySubsequences: false).map { $0 + "\u{1B}[K" }
                    .joined(separator: "\n") + "\n\u{1B}[J"
            } else {
                frame = (first ? "" : "\n") + text + "\n"
            }
            first = false
            guard FileHandleStream.write(frame, to: 1) else { return }
            var timeout = timespec(tv_sec: interval, tv_nsec: 0)
            let signal = sigtimedwait(&stops, nil, &timeout)
            if signal == SIGINT || signal == SIGTERM { return }
        }
    }
}
