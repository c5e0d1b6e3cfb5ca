import Testing
@testable import DropFetch

private func parse(_ text: String) throws -> JobSpec {
    try JobFileParser.parse(Array(text.utf8))
}

private func parseError(_ text: String) -> JobFileError? {
    do {
        _ = try JobFileParser.parse(Array(text.utf8))
        return nil
    } catch {
        return error
    }
}

/// aria2 input files as users have them (docs/job-files.md): tuning options ignored and named,
/// credentials, proxy, `out` with a folder and absolute `dir` applied, the rest refused.
@Suite("aria2 input files")
struct JobFileAria2Tests {
    @Test("tuning options are accepted, have no effect and are listed once each, in order")
    func tuningOptionsAreIgnoredAndNamed() throws {
        let job = try parse("""
            https://a.example/f.iso\thttps://b.example/f.iso
              piece-length=1M
              continue=true
              out=f.iso
            https://c.example/g.iso
              allow-overwrite=true
              file-allocation=none
              enable-mmap=true
              dry-run=false
              ftp-type=BINARY

            """)
        #expect(job.ignoredOptions == ["piece-length", "continue",
                                       "allow-overwrite", "file-allocation", "enable-mmap", "dry-run", "ftp-type"])
        #expect(job.downloads.count == 2)
        #expect(job.downloads[0] == DownloadSpec(urls: ["https://a.example/f.iso", "https://b.example/f.iso"],
                                                 out: "f.iso", line: 1))
        #expect(job.downloads[1] == DownloadSpec(urls: ["https://c.example/g.iso"], line: 5))
    }

    @Test("a plain job file and an Internet Shortcut have no ignored options")
    func nothingIgnoredByDefault() throws {
        #expect(try parse("https://a/x\n  out=x\n").ignoredOptions.isEmpty)
        #expect(try parse("[InternetShortcut]\nURL=https://a/x\n").ignoredOptions.isEmpty)
    }

    @Test("every aria2 option the manual lists for input files is known: applied, ignored or refused")
    func everyManualOptionIsKnown() {
        let manual = """
            all-proxy all-proxy-passwd all-proxy-user allow-overwrite allow-piece-length-change always-resume
            async-dns auto-file-renaming bt-enable-hook-after-hash-check bt-enable-lpd bt-exclude-tracker
            bt-external-ip bt-force-encryption bt-hash-check-seed bt-load-saved-metadata bt-max-peers
            bt-metadata-only bt-min-crypto-level bt-prioritize-piece bt-remove-unselected-file
            bt-request-peer-speed-limit bt-require-crypto bt-save-metadata bt-seed-unverified bt-stop-timeout
            bt-tracker bt-tracker-connect-timeout bt-tracker-interval bt-tracker-timeout check-integrity checksum
            conditional-get connect-timeout content-disposition-default-utf8 continue dir dry-run
            enable-http-keep-alive enable-http-pipelining enable-mmap enable-peer-exchange file-allocation
            follow-metalink follow-torrent force-save ftp-passwd ftp-pasv ftp-proxy ftp-proxy-passwd
            ftp-proxy-user ftp-reuse-connection ftp-type ftp-user gid hash-check-only header http-accept-gzip
            http-auth-challenge http-no-cache http-passwd http-proxy http-proxy-passwd http-proxy-user http-user
            https-proxy https-proxy-passwd https-proxy-user index-out lowest-speed-limit max-connection-per-server
            max-download-limit max-file-not-found max-mmap-limit max-resume-failure-tries max-tries
            max-upload-limit metalink-base-uri metalink-enable-unique-protocol metalink-language metalink-location
            metalink-os metalink-preferred-protocol metalink-version min-split-size no-file-allocation-limit
            no-netrc no-proxy out parameterized-uri pause pause-metadata piece-length proxy-method
            realtime-chunk-checksum referer remote-time remove-control-file retry-wait reuse-uri
            rpc-save-upload-metadata seed-ratio seed-time select-file split ssh-host-key-md stream-piece-selector
            timeout uri-selector use-head user-agent
            """.split(whereSeparator: \.isWhitespace).map(String.init)
        #expect(manual.count == 110)
        for option in manual {
            #expect(JobFileParser.isDownloadKey(option), "\(option)")
            // No option is both applied and in a table of options that are not.
            #expect(!(JobFileParser.downloadKeys.contains(option) && Aria2Options.rule(for: option) != nil), "\(option)")
        }
    }

    @Test("http-user/http-passwd and ftp-user/ftp-passwd go to the mirrors of their protocol")
    func credentialsByScheme() throws {
        let job = try parse("""
            https://h.example/f\tftp://f.example/f\tsftp://s.example/f\thttps://u:p@h2.example/f
              http-user=alice
              http-passwd=s3cret=with=equals
              ftp-user=bob
            https://h.example/g
              http-passwd=
              http-user=carol

            """)
        let first = job.downloads[0]
        #expect(first.httpCredentials == DownloadSpec.Credentials(user: "alice", password: "s3cret=with=equals"))
        #expect(first.ftpCredentials == DownloadSpec.Credentials(user: "bob"))
        #expect(first.credentials(forURL: "https://h.example/f")?.user == "alice")
        #expect(first.credentials(forURL: "ftp://f.example/f")?.user == "bob")
        #expect(first.credentials(forURL: "sftp://s.example/f")?.user == "bob")
        // A URL's own user:pass@ wins.
        #expect(first.credentials(forURL: "https://u:p@h2.example/f") == nil)
        #expect(job.downloads[1].httpCredentials == DownloadSpec.Credentials(user: "carol", password: ""))
        #expect(job.ignoredOptions.isEmpty)
    }

    @Test("a password never shows when a spec is printed")
    func passwordsStayHidden() throws {
        let job = try parse("https://h/f\n  http-user=alice\n  http-passwd=s3cret\n")
        #expect(!String(describing: job).contains("s3cret"))
        #expect(!String(reflecting: job).contains("s3cret"))
        #expect("\(job.downloads[0].httpCredentials!)" == "alice:***")
    }

    @Test("all-proxy is applied to the download, http:// added when it has no scheme")
    func proxyIsApplied() throws {
        let job = try parse("""
            https://a/x
              all-proxy=cache.example.net:3128
            https://a/y
              all-proxy=socks5h://u:p@10.0.0.1:1080
            https://a/z

            """)
        #expect(job.downloads.map(\.proxy) == ["http://cache.example.net:3128", "socks5h://u:p@10.0.0.1:1080", nil])
    }

    @Test("out=sub/f.iso is dir=sub and out=f.iso, below any dir=")
    func outWithFolder() throws {
        let job = try parse("""
            https://a/1
              out=sub/f.iso
            https://a/2
              out=deep/er/g.iso
              dir=base
            https://a/3
              dir=/srv/dl/isos
              out=x/h.iso

            """)
        #expect(job.downloads[0].dir == "sub" && job.downloads[0].out == "f.iso")
        #expect(job.downloads[1].dir == "base/deep/er" && job.downloads[1].out == "g.iso")
        #expect(job.downloads[2].dir == nil && job.downloads[2].out == "h.iso")
        #expect(job.downloads[2].absoluteDir == DownloadSpec.AbsoluteDirectory(path: "/srv/dl/isos/x", line: 7))
    }

    @Test("dir=/ with a folder in out is that folder below the root, not '//folder' (fuzzer finding)")
    func rootDirWithOutFolder() throws {
        let job = try parse("https://e/ea\n  out=sub/a\n  dir=/\n")
        #expect(job.downloads[0].absoluteDir == DownloadSpec.AbsoluteDirectory(path: "/sub", line: 3))
        #expect(job.downloads[0].out == "a")
        #expect(try job.downloads[0].subfolder(in: "/") == "sub")
    }

    @Test("an absolute dir is kept for the agent, resolved only inside the destination")
    func absoluteDirResolvesInsideTheDestination() throws {
        let job = try parse("https://a/f\n  dir=//srv/dl//isos/\n")
        let download = job.downloads[0]
        #expect(download.dir == nil)
        #expect(download.absoluteDir == DownloadSpec.AbsoluteDirectory(path: "/srv/dl/isos", line: 2))
        #expect(try download.subfolder(in: "/srv/dl") == "isos")
        #expect(try download.subfolder(in: "/srv/dl/") == "isos")
        #expect(try download.subfolder(in: "/srv/./x/../dl") == "isos")
        #expect(try download.subfolder(in: "/srv/dl/isos") == nil)
        #expect(try download.subfolder(in: "/") == "srv/dl/isos")

        for outside in ["/srv/d", "/srv/dl/isos/more", "/srv/other", "/srv/dl2"] {
            let error = try #require(throws: JobFileError.self) { try download.subfolder(in: outside) }
            #expect(error.line == 2)
            #expect(error.message.hasPrefix("dir '/srv/dl/isos' is outside the destination"), "\(error)")
        }
        let hidden = try parse("https://a/f\n\n  dir=/srv/dl/.cache\n").downloads[0]
        let error = try #require(throws: JobFileError.self) { try hidden.subfolder(in: "/srv/dl") }
        #expect(error == JobFileError(line: 3, message: "invalid dir '/srv/dl/.cache': component '.cache' starts with '.'"))
        // A relative dir needs no destination.
        #expect(try parse("https://a/f\n  dir=a/b\n").downloads[0].subfolder(in: "/anything") == "a/b")
    }

    @Test("referer and user-agent are sent as headers")
    func refererAndUserAgent() throws {
        let job = try parse("https://a/f\n  referer=https://a/page\n  user-agent=Wget/1.21\n")
        #expect(job.downloads[0].headers == ["Referer: https://a/page", "User-Agent: Wget/1.21"])
    }

    @Test("max-download-limit=0 means no limit, as in aria2")
    func zeroLimitMeansNone() throws {
        #expect(try parse("https://a/f\n  max-download-limit=0\n").downloads[0].maxDownloadLimit == nil)
        #expect(try parse("https://a/f\n  max-download-limit=4294967296G\n").downloads[0].maxDownloadLimit == 1 << 62)
    }

    static let refusals: [(text: String, line: Int, message: String)] = [
        ("https://a/f\n  select-file=1,2\n", 2,
         "aria2 option 'select-file' is not supported: dropfetch does not fetch BitTorrent or Metalink content"),
        ("https://a/f\n  index-out=1=x\n", 2, "aria2 option 'index-out' is not supported: dropfetch does not fetch BitTorrent content"),
        ("https://a/f\n  split=2\n  http-proxy=h:1\n", 3,
         "aria2 option 'http-proxy' is not supported: use all-proxy for this download, or proxy in the config"),
        ("https://a/f\n  all-proxy-user=u\n", 2,
         "aria2 option 'all-proxy-user' is not supported: write the proxy's credentials into all-proxy=http://USER:PASSWORD@HOST:PORT"),
        ("https://a/f\n  no-netrc=true\n", 2,
         "aria2 option 'no-netrc' is not supported: the config's netrc setting decides which credentials are used"),
        ("https://a/f\n  dry-run=true\n", 2, "aria2 option 'dry-run=true' is not supported: dropfetch always downloads the file"),
        ("https://a/f\n  ftp-type=ascii\n", 2,
         "aria2 option 'ftp-type=ascii' is not supported: dropfetch transfers FTP files in binary mode only"),
        ("https://a/f\n  follow-torrent=mem\n", 2,
         "aria2 option 'follow-torrent=mem' is not supported: dropfetch saves a .torrent file as it is, it does not fetch its content"),
        ("https://a/f\n  colour=blue\n", 2, "unknown key 'colour'"),
        ("https://a/f\n  Split=4\n", 2, "unknown key 'Split'"),
        ("split=4\nhttps://a/f\n", 1, "download key 'split' must be indented under its URL"),
        ("https://a/f\nhttp-user=a\n", 2, "download key 'http-user' must be indented under its URL"),
        ("https://a/f\n  http-passwd=secret\n", 2, "http-passwd needs http-user"),
        ("https://a/f\n  ftp-user=a\n  ftp-passwd=x\n  ftp-passwd=y\n", 4, "duplicate key 'ftp-passwd'"),
        ("https://a/f\n  http-user=\n", 2, "http-user is empty"),
        ("https://a/f\n  http-user=a\u{7}b\n", 2, "http-user contains a control character"),
        ("https://a/f\n  all-proxy=ftp://p:21\n", 2,
         "invalid all-proxy (not shown, it may hold a password): expected [http://][USER:PASSWORD@]HOST[:PORT] (or https, socks4, socks4a, socks5, socks5h)"),
        ("https://a/f\n  all-proxy=\n", 2,
         "invalid all-proxy (not shown, it may hold a password): expected [http://][USER:PASSWORD@]HOST[:PORT] (or https, socks4, socks4a, socks5, socks5h)"),
        ("https://a/f\n  all-proxy=http://u:s3cret@:1\n", 2,
         "invalid all-proxy (not shown, it may hold a password): expected [http://][USER:PASSWORD@]HOST[:PORT] (or https, socks4, socks4a, socks5, socks5h)"),
        ("https://a/f\n  referer=*\n", 2, "referer=* (each mirror's own URL) is not supported; write the referring URL"),
        ("https://a/f\n  user-agent=\n", 2, "invalid user-agent '': the value is empty"),
        ("https://a/f\n  dir=base\n  out=\(String(repeating: "d/", count: 2046))f\n", 3,
         "dir and the folder of out together are longer than 4095 bytes"),
    ]

    @Test("options that would change what, where or with which credentials are refused, naming the line",
          arguments: refusals)
    func refused(text: String, line: Int, message: String) throws {
        let error = try #require(parseError(text))
        #expect(error == JobFileError(line: line, message: message))
    }
}
