import Testing
@testable import DropFetch

/// `URLParts.plain(_:)` reads plain URLs without libcurl: wherever it answers, libcurl's parser
/// (`CurlURL`, the one a transfer uses) must read the same scheme, host and userinfo.
@Suite struct URLPartsTests {
    @Test(arguments: [
        ("http://127.0.0.1:18080/small/f1.bin", "http", "127.0.0.1"),
        ("https://Downloads.Example.ORG/a?b#c", "https", "downloads.example.org"),
        ("http://a/", "http", "a"),
        ("http://mirror-1.example:65535", "http", "mirror-1.example"),
        ("http://1.example?x", "http", "1.example"),
    ])
    func plainURLsAreRead(url: String, scheme: String, host: String) throws {
        #expect(URLParts.plain(url) == URLParts(scheme: scheme, host: host, hasUserInfo: false))
        let curl = try CurlURL(url)
        #expect(curl.scheme == scheme && curl.host == host && curl.user == nil, "libcurl reads \(url) the same")
    }

    /// Forms libcurl rewrites or reads in a way a byte scan could get wrong are left to it.
    @Test(arguments: [
        "http://127.1/", "http://0x7f.0.0.1/", "http://2130706433/", "http://127.0.0.01/", "http://1.2.3.256/",
        "http://user:pw@host/", "http://a.example\\@b.example/", "http://[::1]:80/", "http://host:0/",
        "http://host:65536/", "http://host:/", "http://host:080/", "http://ho%73t/", "http://-a.example/",
        "http://a..example/", "http://example./", "HTTP://example/", "ftp://example/", "http:///x",
        "http://exa mple/", "http://ex\u{e4}mple/", "//example/x", "http://a_b/",
    ])
    func unusualURLsAreLeftToLibcurl(url: String) {
        #expect(URLParts.plain(url) == nil)
    }

    /// Random URLs over the characters that matter to an authority: each one the scan reads, libcurl
    /// reads the same way.
    @Test func agreesWithLibcurlOnRandomURLs() throws {
        let pieces = ["a", "Z", "0", "1", "9", "255", "256", "01", "0x", "7f", ".", "-", ":", "80", "@", "%41",
                      "[", "]", "\\", "/", "?", "#", "_", " ", "example", "127", "65535", "99999"]
        let plainPieces = ["a", "Z", "0", "1", "9", "255", "01", "x", ".", "-", ":80", ":65535", "example", "127"]
        var generator = SystemRandomNumberGenerator()
        var read = 0
        for _ in 0..<20_000 {
            let scheme = ["http://", "https://", "HTTP://", "ftp://"].randomElement(using: &generator)!
            // Half of them from pieces a plain host is made of, so that many are read without libcurl.
            let from = Bool.random(using: &generator) ? pieces : plainPieces
            let authority = (0..<Int.random(in: 1...7, using: &generator))
                .map { _ in from.randomElement(using: &generator)! }.joined()
            let url = scheme + authority + ["", "/x", "?q", "/a/../b"].randomElement(using: &generator)!
            guard let plain = URLParts.plain(url) else { continue }
            read += 1
            let curl = try #require(try? CurlURL(url), "libcurl refuses \(url)")
            #expect(plain == URLParts(scheme: curl.scheme ?? "", host: curl.host ?? "",
                                      hasUserInfo: curl.user != nil || curl.password != nil), "\(url)")
        }
        #expect(read > 600, "too few plain URLs to compare")
    }
}
