// libFuzzer target for the job-file parser (docs/job-files.md); compiled together with Sources/DropFetch by Fuzz/run.sh.

/// Stops the run with `message`: libFuzzer records the input as a crash.
func violated(_ message: String) -> Never {
    fatalError("invariant violated: \(message)")
}

/// True when `text` holds a C0 control character, DEL or a C1 control character.
func hasControl(_ text: String) -> Bool {
    text.unicodeScalars.contains(where: FileName.isControl)
}

/// Checks what `FileName.fromURL` and `Redaction.url` promise for any string that may reach them.
func checkURLHelpers(_ url: String) {
    let name = FileName.fromURL(url)
    if let problem = FileName.validate(name) {
        violated("FileName.fromURL(\(url.debugDescription)) gave \(name.debugDescription), which \(problem)")
    }
    _ = Redaction.url(url)
    _ = Redaction.header(url)
}

/// Checks one parsed download: its `out`, `dir` and headers are what the parser promised.
func checkDownload(_ download: DownloadSpec) {
    if download.urls.isEmpty { violated("download at line \(download.line) has no URL") }
    for url in download.urls {
        if !JobFileParser.isWellFormedURL(url) { violated("accepted malformed URL \(url.debugDescription)") }
        checkURLHelpers(url)
    }
    if let out = download.out, let problem = FileName.validate(out) {
        violated("accepted out \(out.debugDescription), which \(problem)")
    }
    if let dir = download.dir, let problem = JobFileParser.directoryProblem(dir) {
        violated("accepted dir \(dir.debugDescription), which \(problem)")
    }
    for header in download.headers where header.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
        violated("accepted header with CR or LF: \(header.debugDescription)")
    }
    if let limit = download.maxDownloadLimit, limit <= 0 || limit > Units.maxSize {
        violated("max-download-limit \(limit) is not in 1...2^62")
    }
    if let absolute = download.absoluteDir {
        // "/" itself is the file-system root: inside the destination only when that is "/".
        let components = absolute.path == "/" ? [""] : absolute.path.split(separator: "/", omittingEmptySubsequences: false)
        if components.first != "" || components.dropFirst().contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) {
            violated("accepted absolute dir \(absolute.path.debugDescription)")
        }
        if download.dir != nil { violated("both dir and an absolute dir") }
        if let relative = try? absolute.relative(to: "/"), let problem = JobFileParser.directoryProblem(relative) {
            violated("absolute dir \(absolute.path.debugDescription) resolved to \(relative.debugDescription), which \(problem)")
        }
    }
    for credentials in [download.httpCredentials, download.ftpCredentials].compactMap({ $0 }) {
        if credentials.user.isEmpty || hasControl(credentials.user) || credentials.password.map(hasControl) == true {
            violated("accepted credentials with a control character or an empty user")
        }
    }
    if let proxy = download.proxy, !JobFileParser.isWellFormedURL(proxy) { violated("accepted proxy \(proxy.debugDescription)") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let lineCount = bytes.count { $0 == 0x0A } + 1
    do throws(JobFileError) {
        let job = try JobFileParser.parse(bytes)
        if job.downloads.isEmpty { violated("parsed a job without downloads") }
        if let className = job.className, className.isEmpty || hasControl(className) {
            violated("accepted class \(className.debugDescription)")
        }
        for download in job.downloads {
            if !(1...lineCount).contains(download.line) { violated("download line \(download.line) out of range") }
            checkDownload(download)
        }
    } catch {
        if let line = error.line, !(1...lineCount).contains(line) {
            violated("error line \(line) outside 1...\(lineCount): \(error.message)")
        }
        if error.message.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) {
            violated("error message with CR or LF: \(error.message.debugDescription)")
        }
    }
    let text = String(decoding: bytes, as: UTF8.self)
    for line in text.split(whereSeparator: \.isNewline).prefix(64) {
        checkURLHelpers(String(line))
    }
    return 0
}
