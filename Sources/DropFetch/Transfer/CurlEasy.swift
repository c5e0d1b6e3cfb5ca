import CCurl

/// One libcurl easy handle (curl_easy_init(3)), cleaned up in deinit.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    private var headerList: CurlStringList?
    private var connectToList: CurlStringList?
    /// CURLOPT_ERRORBUFFER storage: libcurl writes the detailed message of a failure here.
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws(CurlError) {
        guard let handle = curl_easy_init() else { throw CurlError(CURLE_FAILED_INIT) }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        do {
            try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        } catch {
            curl_easy_cleanup(handle)
            errorBuffer.deallocate()
            throw error
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// In a multi handle: added (curl_multi_add_handle(3)) and not removed since. Such a handle
    /// is never reset for another transfer (`CurlMulti.recycle`).
    var isAttached = false

    /// Its transfer was paused at some time (CURL_WRITEFUNC_PAUSE). libcurl 7.88 may keep bytes it
    /// held back for it after the handle left the multi handle (multi_done returns early while an
    /// HTTP/2 connection still carries other streams) and curl_easy_reset keeps them, to be
    /// written on the next unpause: such a handle is cleaned up, never used for another transfer.
    var hasPaused = false

    /// Back to the state of a new handle for the next transfer (curl_easy_reset(3)): every option
    /// to its default, the lists set on it freed; libcurl's caches (DNS, TLS sessions) stay.
    func reset() {
        curl_easy_reset(handle)
        headerList = nil
        connectToList = nil
        errorBuffer[0] = 0
        _ = dfc_setopt_pointer(handle, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
    }

    var key: Int { Int(bitPattern: handle) }

    /// The detail libcurl left in the error buffer for the last failure, if any.
    var errorDetail: String? {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? nil : text
    }

    func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(dfc_setopt_long(handle, option, value))
    }

    func set(_ option: CURLoption, _ value: Bool) throws(CurlError) {
        try check(dfc_setopt_long(handle, option, value ? 1 : 0))
    }

    func set(_ option: CURLoption, offset value: Int64) throws(CurlError) {
        try check(dfc_setopt_off(handle, option, curl_off_t(value)))
    }

    /// libcurl copies string options (since 7.17.0); a short string is passed from a copy on the stack (withCString).
    func set(_ option: CURLoption, _ value: String?) throws(CurlError) {
        guard let value else { return try check(dfc_setopt_string(handle, option, nil)) }
        try check(value.withCString { dfc_setopt_string(handle, option, $0) })
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(CurlError) {
        try check(dfc_setopt_pointer(handle, option, value))
    }

    func set(_ option: CURLoption, callback: dfc_data_callback) throws(CurlError) {
        try check(dfc_setopt_data_callback(handle, option, callback))
    }

    func setOpenSocket(_ callback: dfc_opensocket_callback) throws(CurlError) {
        try check(dfc_setopt_opensocket_callback(handle, callback))
    }

    /// CURLOPT_SSH_KEYFUNCTION with CURLOPT_SSH_KEYDATA.
    func setSSHKeyCheck(_ callback: dfc_sshkey_callback, data: UnsafeMutableRawPointer) throws(CurlError) {
        try check(dfc_setopt_sshkey_callback(handle, callback))
        try set(CURLOPT_SSH_KEYDATA, pointer: data)
    }

    /// CURLOPT_HTTPHEADER; the list is kept alive as long as the handle.
    func setHeaders(_ lines: [String]) throws(CurlError) {
        let list = CurlStringList(lines)
        try check(dfc_setopt_slist(handle, CURLOPT_HTTPHEADER, list.head))
        headerList = list
    }

    /// CURLOPT_CONNECT_TO (`HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT` entries); nil clears it.
    /// The list is kept alive as long as the handle.
    func setConnectTo(_ entries: [String]?) throws(CurlError) {
        let list = entries.map(CurlStringList.init)
        try check(dfc_setopt_slist(handle, CURLOPT_CONNECT_TO, list?.head))
        connectToList = list
    }

    /// Unpauses a transfer its write callback paused (curl_easy_pause(3) with CURLPAUSE_CONT);
    /// libcurl may deliver the held data to the write callback before this returns.
    @discardableResult
    func resume() -> CURLcode {
        curl_easy_pause(handle, CURLPAUSE_CONT)
    }

    func info(long key: CURLINFO) -> Int {
        var value = 0
        _ = dfc_getinfo_long(handle, key, &value)
        return value
    }

    func info(offset key: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        _ = dfc_getinfo_off(handle, key, &value)
        return Int64(value)
    }

    func info(string key: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard dfc_getinfo_string(handle, key, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }
}

/// A `curl_slist` (curl_slist_append(3)) freed with curl_slist_free_all(3).
final class CurlStringList {
    private(set) var head: UnsafeMutablePointer<curl_slist>?

    init(_ lines: [String]) {
        for line in lines { head = curl_slist_append(head, line) }
    }

    deinit { curl_slist_free_all(head) }
}
