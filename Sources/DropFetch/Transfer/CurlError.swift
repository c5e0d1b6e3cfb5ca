import CCurl

/// A libcurl failure: the `CURLcode` and its text from curl_easy_strerror(3), plus the
/// transfer's CURLOPT_ERRORBUFFER detail when there is one.
public struct CurlError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var detail: String?

    init(_ code: CURLcode, detail: String? = nil) {
        self.code = Int(code.rawValue)
        self.detail = detail
    }

    var curlCode: CURLcode { CURLcode(rawValue: UInt32(code)) }

    public var message: String {
        String(cString: curl_easy_strerror(curlCode))
    }

    public var description: String {
        if let detail, !detail.isEmpty, detail != message { return "\(message): \(detail)" }
        return message
    }
}

/// A failure of the multi interface (curl_multi_strerror(3)).
public struct CurlMultiError: Error, Sendable, CustomStringConvertible {
    public var code: Int

    init(_ code: CURLMcode) { self.code = Int(code.rawValue) }

    public var description: String {
        String(cString: curl_multi_strerror(CURLMcode(rawValue: Int32(code))))
    }
}

@inline(__always)
func check(_ code: CURLcode) throws(CurlError) {
    if code != CURLE_OK { throw CurlError(code) }
}
