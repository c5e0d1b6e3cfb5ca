@testable import DropFetch
import Testing

/// The multi handle's idle easy handles (`CurlMulti.recycle`): a handle goes to the next transfer
/// only once it left the multi handle, and never after its transfer was paused (libcurl may still
/// hold bytes for it, which the next unpause would write into another download).
@Suite("Idle easy handles")
struct CurlMultiPoolTests {
    @Test("a handle out of the multi handle is reset and reused; one still in it, or ever paused, is not")
    func recycleRules() throws {
        let multi = try CurlMulti()
        let first = try multi.makeEasy()
        try multi.add(first)
        multi.recycle(first)
        let whileAttached = try multi.makeEasy()
        #expect(whileAttached !== first)

        multi.remove(first)
        multi.recycle(first)
        let reused = try multi.makeEasy()
        #expect(reused === first)

        reused.hasPaused = true
        multi.recycle(reused)
        let afterPause = try multi.makeEasy()
        #expect(afterPause !== reused)
    }
}
