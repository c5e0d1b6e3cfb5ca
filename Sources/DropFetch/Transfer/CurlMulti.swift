import CCurl

/// The libcurl multi handle the event loop waits on (curl_multi_poll(3)).
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    init() throws(CurlError) {
        guard let handle = curl_multi_init() else { throw CurlError(CURLE_FAILED_INIT) }
        self.handle = handle
    }

    deinit { curl_multi_cleanup(handle) }

    func add(_ easy: CurlEasy) throws(CurlMultiError) {
        let code = curl_multi_add_handle(handle, easy.handle)
        if code != CURLM_OK { throw CurlMultiError(code) }
        easy.isAttached = true
    }

    func remove(_ easy: CurlEasy) {
        curl_multi_remove_handle(handle, easy.handle)
        easy.isAttached = false
    }

    /// Easy handles of transfers that are gone, reset (`CurlEasy.reset`), for the next ones: a new
    /// handle and its cleanup (curl_easy_init(3), curl_easy_cleanup(3)) cost a small job 13 K
    /// instructions, a reset a fraction of that.
    private var idle: [CurlEasy] = []
    /// More idle handles than this are cleaned up: the pool follows the transfers running at once.
    private static let idleLimit = 64

    /// A handle for a new transfer: an idle one, else a new one.
    func makeEasy() throws(CurlError) -> CurlEasy {
        if let easy = idle.popLast() { return easy }
        return try CurlEasy()
    }

    /// Takes the handle of a transfer that is gone, unless it is still attached, was ever paused
    /// (`CurlEasy.hasPaused`) or the pool is full.
    func recycle(_ easy: CurlEasy) {
        guard !easy.isAttached, !easy.hasPaused, idle.count < CurlMulti.idleLimit else { return }
        easy.reset()
        idle.append(easy)
    }

    /// Drives all transfers (curl_multi_perform(3)); returns the number still running.
    @discardableResult
    func perform() throws(CurlMultiError) -> Int {
        var running: Int32 = 0
        let code = curl_multi_perform(handle, &running)
        if code != CURLM_OK { throw CurlMultiError(code) }
        return Int(running)
    }

    /// Sleeps until a transfer or one of `extra` descriptors needs attention, or `timeoutMS` passes.
    func poll(extra: inout [curl_waitfd], timeoutMS: Int) throws(CurlMultiError) {
        var ready: Int32 = 0
        let count = UInt32(extra.count)
        let code = extra.withUnsafeMutableBufferPointer { buffer in
            curl_multi_poll(handle, buffer.baseAddress, count, Int32(clamping: timeoutMS), &ready)
        }
        if code != CURLM_OK { throw CurlMultiError(code) }
    }

    /// Finished transfers (curl_multi_info_read(3)): the easy handle key and its result code.
    func completed() -> [(key: Int, result: CURLcode)] {
        var results: [(Int, CURLcode)] = []
        var queued: Int32 = 0
        while let message = curl_multi_info_read(handle, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            results.append((Int(bitPattern: easy), dfc_msg_result(message)))
        }
        return results
    }
}
