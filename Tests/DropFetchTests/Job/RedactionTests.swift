import Testing
@testable import DropFetch

@Suite struct RedactionTests {
    @Test(arguments: [
        ("https://user:pass@example.org/a.iso", "https://***@example.org/a.iso"),
        ("https://user@example.org", "https://***@example.org"),
        ("ftp://a:b@h:21/x?y=z", "ftp://***@h:21/x?y=z"),
        ("https://u:p@ss@h/", "https://***@h/"),
        ("https://u:p#w?d@h/f", "https://***@h/f"),
        ("https://:@h/", "https://***@h/"),
        ("https://example.org/a.iso", "https://example.org/a.iso"),
        ("https://registry.example/@scope/pkg/-/pkg-1.0.tgz", "https://registry.example/@scope/pkg/-/pkg-1.0.tgz"),
        ("https://h/path?mail=a@b.example", "https://h/path?mail=a@b.example"),
        ("https:/user:pass@h/x", "https:/***@h/x"),
        ("user:pass@h/x", "***@h/x"),
        ("h/x?mail=a@b", "h/x?mail=a@b"),
        ("", ""),
    ])
    func url(_ input: String, _ expected: String) {
        #expect(Redaction.url(input) == expected)
    }

    @Test(arguments: [
        ("Authorization: Bearer abc", "Authorization: ***"),
        ("authorization:Basic dXNlcjpwYXNz", "authorization: ***"),
        ("Proxy-Authorization: Basic x", "Proxy-Authorization: ***"),
        ("Cookie: session=1; other=2", "Cookie: ***"),
        ("Set-Cookie: id=1; HttpOnly", "Set-Cookie: ***"),
        ("AUTHORIZATION : x", "AUTHORIZATION : ***"),
        ("Authorization:", "Authorization: ***"),
        ("Authorization Bearer abc", "Authorization ***"),
        ("  cookie session=1", "  cookie ***"),
        ("Accept: */*", "Accept: */*"),
        ("X-Authorization: keep", "X-Authorization: keep"),
        ("Cookie-Policy: strict", "Cookie-Policy: strict"),
        ("User-Agent: dropfetch", "User-Agent: dropfetch"),
        ("no header here", "no header here"),
    ])
    func header(_ input: String, _ expected: String) {
        #expect(Redaction.header(input) == expected)
    }
}
