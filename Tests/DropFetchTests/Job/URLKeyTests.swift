@testable import DropFetch
import Testing

/// How duplicates compare URLs (DESIGN §10): scheme and host lowercased, the default port and the
/// fragment dropped, the rest byte for byte.
@Suite("URL key")
struct URLKeyTests {
    @Test("the same URL however its scheme, host, default port and fragment are written", arguments: [
        ("HTTP://Example.COM/a/B.iso", "http://example.com/a/B.iso"),
        ("http://example.com:80/a?x=1#part", "http://example.com/a?x=1"),
        ("https://example.com:443/", "https://example.com/"),
        ("https://example.com:8443/f", "https://example.com:8443/f"),
        ("http://User:Pw@Host.example:80/f", "http://User:Pw@host.example/f"),
        ("http://[::1]:80/f", "http://[::1]/f"),
        ("http://[::1]:8080/f", "http://[::1]:8080/f"),
        ("ftp://Mirror.example:21/pub/f.tar", "ftp://mirror.example/pub/f.tar"),
        ("http://example.com#only", "http://example.com"),
        ("SFTP://Host:22/f", "sftp://host/f"),
        ("ftps://host:990/f", "ftps://host/f"),
        ("ftps://host:21/f", "ftps://host:21/f"),
        ("gopher://host:70/f", "gopher://host:70/f"),
        ("http://host:/f", "http://host/f"),
        ("not a url", "not a url"),
    ])
    func normalized(url: String, expected: String) {
        #expect(URLKey.normalized(url) == expected)
    }

    @Test("path, query and case of the path count; keys are 32 hex digits")
    func differences() {
        #expect(URLKey.key("http://h/a") != URLKey.key("http://h/A"))
        #expect(URLKey.key("http://h/a?x=1") != URLKey.key("http://h/a?x=2"))
        #expect(URLKey.key("http://h/a") != URLKey.key("https://h/a"))
        #expect(URLKey.key("http://H:80/a#f") == URLKey.key("http://h/a"))
        #expect(URLKey.key("http://h/a").count == 32 && URLKey.key("http://h/a").allSatisfy(\.isHexDigit))
    }
}
