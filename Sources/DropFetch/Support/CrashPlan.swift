import Glibc
import Synchronization

/// Deterministic crash points for the crash-matrix tests: with `DROPFETCH_CRASH_AT=point` (or
/// `point:N` for the N-th time it is reached) a debug build sends itself SIGKILL there.
/// Release builds ignore the variable.
///
/// Points are reached on the loop and on the workers (a claim, a filing), so the count left is atomic.
final class CrashPlan: Sendable {
    enum Point: String, CaseIterable, Sendable {
        /// A job was renamed into work/ and nothing else happened yet.
        case claimed
        /// Body bytes are in the `.part` file, the transfer is not finished.
        case midTransfer = "mid-transfer"
        /// Body bytes of a segment (one of several connections of a download) are in the `.part`.
        case midSegment = "mid-segment"
        /// A segmented download's piece map was written to its resume record.
        case piecesRecorded = "pieces-recorded"
        /// The data is complete and synced, the `.part` not yet renamed.
        case dataComplete = "data-complete"
        /// The final file has its name, no status file yet.
        case published
        /// The status file is in done/ or failed/, the job file still in work/.
        case statusWritten = "status-written"
        /// Recovery of an earlier run's work folder has begun.
        case recovery
    }

    private let point: Point
    private let remaining: Atomic<Int>

    private init(point: Point, count: Int) {
        self.point = point
        remaining = Atomic(count)
    }

    /// The plan from the environment, or nil (always nil in release builds).
    static func fromEnvironment() -> CrashPlan? {
        #if DEBUG
        guard let raw = getenv("DROPFETCH_CRASH_AT") else { return nil }
        let parts = String(cString: raw).split(separator: ":")
        guard let first = parts.first, let point = Point(rawValue: String(first)) else { return nil }
        let count = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
        return CrashPlan(point: point, count: max(1, count))
        #else
        return nil
        #endif
    }

    /// Dies here with SIGKILL if this is the planned point and occurrence.
    func reach(_ reached: Point) {
        guard reached == point else { return }
        if remaining.subtract(1, ordering: .relaxed).newValue == 0 { kill(getpid(), SIGKILL) }
    }
}
