import CCurl
import CLinux
import Glibc

/// One download attempt of one URL into its `.part` file, driven by the agent's multi handle.
///
/// Before a body byte is written the response is checked against the partial data: for HTTP by
/// the header callback (`ResumeDecision`), for FTP and SFTP by the remote size and modification
/// time at the first body byte (`FileResume`); the write callback appends straight into the file.
final class Transfer {
    enum State {
        case awaitingResponse
        case writing
        case alreadyComplete
        case restarting(String)
        /// A 3xx with this `Location`: no body is read, the agent follows it (RedirectPolicy).
        case redirecting(String)
        case failed(Failure)
        /// A segment wrote up to its end (Transfer+Segment.swift).
        case segmentComplete
    }

    private(set) var request: TransferRequest
    /// The protocol family of the job's URL, which decides how it resumes.
    let kind: TransferProtocol
    private(set) var easy: CurlEasy
    /// Where `easy` goes when this transfer is gone, for the next one (`CurlMulti.recycle`);
    /// nil: it is cleaned up with the transfer.
    private weak var handles: CurlMulti?
    /// The `.part` this download owns; it outlives the transfer between attempts.
    let part: PartFile
    var state = State.awaitingResponse
    /// Set when this is one extra connection of a segmented download (Transfer+Segment.swift).
    let segment: SegmentWindow?
    /// Set when this first connection of a download was split (SegmentedDownload.adopt): its
    /// open-ended response is written only up to the window's end, which work stealing may shrink.
    var stream: SegmentWindow?
    /// The segmented download this transfer is a connection of, if it was split.
    weak var group: SegmentedDownload?
    /// Called once the response is accepted and its body is about to be written (the agent then
    /// looks whether the download may be split).
    var accepted: (() -> Void)?
    /// Bytes of the download on disk: the piece map's once it is split, else the `.part`'s size.
    var downloadedBytes: Int64 { group?.doneBytes ?? written }
    /// The `Range` start (HTTP) or resume offset (FTP `REST`, SFTP seek) sent with this request.
    let requestedOffset: Int64
    /// Where the accepted response's body was appended: the Range start for a `206`, 0 when the
    /// server sent the whole file (the status file's `resumed_from`).
    private(set) var appendedFrom: Int64 = 0
    /// Bytes of valid data in the `.part` file.
    var written: Int64 { part.size }
    /// The full size of the file, once the server has said it.
    private(set) var total: Int64?
    /// How the data is hashed; nil until the response is accepted, and when nothing needs a digest.
    private var digest: DownloadDigest?
    /// SHA-256 unless the part's `digest` is `none`, and the job's `checksum=` algorithm.
    private var digestAlgorithms: [Checksum.Algorithm] {
        DownloadDigest.algorithms(request.digest, checksum: request.checksum?.algorithm)
    }
    private var response = ResponseHeaders()
    /// The address refused by `block_private_addresses`, if one was.
    var blockedAddress: String?
    /// Whose proxy the request goes through under `block_private_addresses`: the targets are
    /// checked by name before each request, and only a trusted proxy's sockets skip the check.
    var proxyUse = ProxyRoute.Use.none
    /// The redirect target checked at the end of a 3xx's headers, pinned when it is followed.
    var redirectCheck: (check: ProxyRoute.TargetCheck, target: CurlURL)?
    /// The SFTP host-key check, kept alive as the key callback's data.
    var hostKeyCheck: HostKeyCheck?
    let crashPlan: CrashPlan?
    /// Set while a bandwidth limit applies (Agent+Bandwidth): asked before each write whether the
    /// bytes may be taken now; false pauses the transfer (CURL_WRITEFUNC_PAUSE) and libcurl
    /// delivers the same bytes again once the agent resumes it. Nil costs an unlimited transfer
    /// nothing but this check.
    var admit: ((Int) -> Bool)?
    /// The loop turn's share of receiving (`ReceiveBudget`), asked before `admit`: bytes it
    /// refuses come again in the next turn, so no bandwidth is counted for them twice.
    var receiveBudget: ReceiveBudget?
    /// The turn of `receivedInTurn`, and the bytes taken in it (kept by `ReceiveBudget`).
    var receivedTurn = 0
    var receivedInTurn = 0
    /// Called when a response to a resuming request starts the data over from byte 0 (a 200
    /// answer to a Range, a changed file), so that the log says so.
    var restartedFromZero: (() -> Void)?

    /// Prepares the request for the data `part` still lacks; does not start it. Data that no
    /// validator can vouch for, or that the record does not count as durable, is cut off first.
    init(_ request: TransferRequest, part: PartFile, crashPlan: CrashPlan? = nil, handles: CurlMulti? = nil) throws {
        self.request = request
        self.part = part
        self.crashPlan = crashPlan
        kind = request.protocolKind
        requestedOffset = try part.resumableBytes(over: kind)
        total = requestedOffset > 0 ? part.record.size : nil
        segment = nil
        easy = try handles?.makeEasy() ?? CurlEasy()
        self.handles = handles
        try configure()
    }

    deinit {
        // Only a handle nothing else holds is reset for another transfer.
        if let handles, isKnownUniquelyReferenced(&easy) { handles.recycle(easy) }
    }

    /// Prepares the request of one segment of `part` (HTTP only): `Range` and `If-Range` of
    /// `segment`; nothing in the file is cut, and only the segment's bytes are ever written.
    init(_ request: TransferRequest, segment: SegmentWindow, part: PartFile, crashPlan: CrashPlan? = nil) throws {
        self.request = request
        self.part = part
        self.crashPlan = crashPlan
        self.segment = segment
        kind = request.protocolKind
        requestedOffset = segment.start
        total = segment.total
        easy = try CurlEasy()
        try configure()
    }

    /// CURLOPT_USERAGENT, made once.
    private static let userAgent = "dropfetch/\(DropFetchVersion.string)"

    /// Sets the options of the request; throws a `TransferFailure` when it must not be sent at all.
    private func configure() throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_URL, request.target)
        try easy.set(CURLOPT_NOSIGNAL, true)
        // A proxy's CONNECT answer is not the response: only the target's headers reach the checks.
        try easy.set(CURLOPT_SUPPRESS_CONNECT_HEADERS, true)
        // The agent follows redirects itself, so that headers stay with their origin (RedirectPolicy).
        try easy.set(CURLOPT_FOLLOWLOCATION, false)
        try easy.set(CURLOPT_PROTOCOLS_STR, request.protocolList)
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, request.protocolList)
        try easy.set(CURLOPT_HTTP_CONTENT_DECODING, false)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, request.connectTimeout.milliseconds)
        if request.lowSpeed.bytesPerSecond > 0 {
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, Int(request.lowSpeed.bytesPerSecond))
            try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, request.lowSpeed.duration.milliseconds / 1000))
        }
        try easy.set(CURLOPT_MAXFILESIZE_LARGE, offset: request.maxFileSize)
        if request.timeout > .zero { try easy.set(CURLOPT_TIMEOUT_MS, request.timeout.milliseconds) }
        // Always ours: it also makes the socket close-on-exec, which libcurl 7.88's socket() does not.
        try easy.setOpenSocket(transferOpenSocketCallback)
        try easy.set(CURLOPT_OPENSOCKETDATA, pointer: context)
        try easy.set(CURLOPT_USERAGENT, Transfer.userAgent)
        if let credentials = RedirectPolicy.credentials(for: request) {
            try easy.set(CURLOPT_USERNAME, credentials.user)
            try easy.set(CURLOPT_PASSWORD, credentials.password ?? "")
        }
        try configureNetwork()
        try easy.set(CURLOPT_BUFFERSIZE, 256 * 1024)
        var headers = RedirectPolicy.headers(for: request)
        if kind.isFileBased {
            try easy.set(CURLOPT_FILETIME, true)
            if requestedOffset > 0 { try easy.set(CURLOPT_RESUME_FROM_LARGE, offset: requestedOffset) }
        } else if let segment {
            try easy.set(CURLOPT_RANGE, segment.rangeHeader)
            headers.append("If-Range: \(segment.validator)")
        } else if requestedOffset > 0 {
            try easy.set(CURLOPT_RANGE, "\(requestedOffset)-")
            if let validator = part.record.validator { headers.append("If-Range: \(validator)") }
        }
        if !headers.isEmpty { try easy.setHeaders(headers) }
        try easy.set(CURLOPT_HEADERFUNCTION, callback: transferHeaderCallback)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        try easy.set(CURLOPT_WRITEFUNCTION, callback: transferWriteCallback)
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
    }

    /// Re-arms this transfer for a redirect hop (`hop` from RedirectPolicy): same `.part`, same
    /// Range and If-Range, the hop's URL, and the job's headers and credentials only where its
    /// origin allows. The easy handle must be out of the multi handle; adding it again starts it.
    func follow(_ hop: TransferRequest) throws {
        guard case .redirecting = state else { return }
        request = hop
        state = .awaitingResponse
        response = ResponseHeaders()
        socketShortage = false
        try easy.set(CURLOPT_URL, hop.target)
        let credentials = RedirectPolicy.credentials(for: hop)
        try easy.set(CURLOPT_USERNAME, credentials?.user)
        try easy.set(CURLOPT_PASSWORD, credentials.map { $0.password ?? "" })
        var headers = RedirectPolicy.headers(for: hop)
        if let segment {
            headers.append("If-Range: \(segment.validator)")
        } else if requestedOffset > 0, let validator = part.record.validator {
            headers.append("If-Range: \(validator)")
        }
        try easy.setHeaders(headers)
        if let redirectCheck { try pinTarget(redirectCheck.check, of: redirectCheck.target) }
        redirectCheck = nil
    }

    /// A header of the response being read (lower-case name).
    func response(header name: ResponseHeaders.Name) -> String? { response[name] }

    // MARK: - libcurl callbacks

    /// CURLOPT_HEADERFUNCTION: collects one response's headers and decides at its blank line.
    /// FTP server replies come here too; they are not HTTP and are left to libcurl.
    fileprivate func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
        // Bytes compared as bytes: the generic walk of a literal's `utf8` cost more than the line.
        if line.count >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
           line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/") {
            response = ResponseHeaders(statusLine: line)
            return true
        }
        if response.status == 0 { return true }
        if (line.count == 2 && line[0] == 0x0D && line[1] == 0x0A) || (line.count == 1 && line[0] == 0x0A) {
            guard response.isFinal(following: false) else { return true }
            if let location = response.redirectLocation {
                // Through a proxy under block_private_addresses, the hop's target is checked here.
                guard redirectAllowed() else { return false }
                state = .redirecting(location)
                return false
            }
            return decide(status: response.status)
        }
        response.add(line)
        return true
    }

    /// CURLOPT_WRITEFUNCTION: appends body bytes to the `.part` file; false aborts the transfer.
    fileprivate func receiveBody(_ data: UnsafeRawBufferPointer) -> Bool {
        // Another agent may own the job by now: nothing more goes into its file (DESIGN.md §10).
        if let fence = request.fence, !fence.permits() { return false }
        if case .awaitingResponse = state {
            if TransferProtocol(of: easy, fallback: kind).isFileBased {
                guard decideFile(bodyEnded: false) else { return false }
            } else {
                let status = easy.info(long: CURLINFO_RESPONSE_CODE)
                guard decide(status: status == 0 ? (requestedOffset > 0 ? 206 : 200) : status) else { return false }
            }
        }
        if let segment { return receiveSegmentBody(data, segment) }
        guard case .writing = state else { return false }
        if let total, written + Int64(data.count) > total {
            // More than Content-Range (or Content-Length) announced: only the announced bytes count.
            let fits = Int(max(0, total - written))
            if fits > 0, !receiveBody(UnsafeRawBufferPointer(rebasing: data.prefix(fits))) { return false }
            state = .failed(Failure(.network, "the body runs past the announced \(total) bytes"))
            return false
        }
        if let stream, written + Int64(data.count) > stream.end {
            // Split: the bytes past the window belong to another segment.
            let fits = Int(max(0, stream.end - written))
            if fits > 0, !receiveBody(UnsafeRawBufferPointer(rebasing: data.prefix(fits))) { return false }
            state = .segmentComplete
            return false
        }
        if written + Int64(data.count) > request.maxFileSize {
            state = .failed(Failure(.tooLarge, "larger than max_file_size (\(request.maxFileSize) bytes)"))
            return false
        }
        do {
            try part.file.write(data)
        } catch {
            let kind: ErrorKind = error.isNoSpace ? .noSpace : .internal
            state = .failed(Failure(kind, error.description))
            return false
        }
        part.size += Int64(data.count)
        digest?.append(data, size: part.size)
        part.startWritebackIfDue()
        crashPlan?.reach(.midTransfer)
        if let stream {
            stream.advance(by: Int64(data.count))
            if stream.isComplete {
                state = .segmentComplete
                return false
            }
        }
        return true
    }

    /// CURLOPT_OPENSOCKETFUNCTION: opens the socket unless the address is blocked.
    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let family = address.pointee.family
        let blocked = request.blockPrivateAddresses && proxyUse != .trusted && withUnsafeMutablePointer(to: &address.pointee.addr) { pointer in
            AddressPolicy.isBlocked(family: family, address: UnsafeRawPointer(pointer))
        }
        if blocked {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            withUnsafeMutablePointer(to: &address.pointee.addr) { pointer in
                let raw = UnsafeRawPointer(pointer)
                if family == AF_INET {
                    var ip = raw.loadUnaligned(as: sockaddr_in.self).sin_addr
                    _ = inet_ntop(AF_INET, &ip, &text, socklen_t(text.count))
                } else if family == AF_INET6 {
                    var ip = raw.loadUnaligned(as: sockaddr_in6.self).sin6_addr
                    _ = inet_ntop(AF_INET6, &ip, &text, socklen_t(text.count))
                }
            }
            blockedAddress = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return CURL_SOCKET_BAD
        }
        let opened = socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
        // libcurl 7.88 reports this only as CURLE_COULDNT_CONNECT, with no CURLINFO_OS_ERRNO.
        socketShortage = opened < 0 && DescriptorLimit.isShortage(code: dfl_errno())
        return opened
    }

    private func decide(status: Int) -> Bool {
        // Accepting a response may cut the `.part` back: not for a fenced agent.
        if let fence = request.fence, !fence.permits() { return false }
        if let segment { return decideSegment(status: status, segment) }
        return apply(ResumeDecision.decide(
            status: status, contentRange: response[.contentRange],
            contentLength: response[.contentLength].flatMap { Int64($0.trimmingWhitespace()) },
            offset: requestedOffset, recordedTotal: part.record.size,
            validatorMatches: part.record.matches(etag: response[.etag], lastModified: response[.lastModified])))
    }

    /// FTP and SFTP: decides from the remote size and modification time libcurl learnt before the
    /// data (`SIZE`/`MDTM`, the SFTP stat), against the resume record.
    private func decideFile(bodyEnded: Bool) -> Bool {
        let remaining = easy.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
        let modified = easy.info(offset: CURLINFO_FILETIME_T)
        remoteModified = modified >= 0 ? modified : nil
        let remote = FileResume.Remote(remaining: remaining >= 0 ? remaining : nil, modified: remoteModified)
        return apply(FileResume.decide(offset: requestedOffset, remote: remote, recordedSize: part.record.size,
                                       recordedModified: part.record.modified, bodyEnded: bodyEnded))
    }

    /// The remote file's modification time (FTP and SFTP), recorded as part of the validator.
    private var remoteModified: Int64?
    /// The last socket(2) failed for want of a descriptor (EMFILE, ENFILE); cleared by one that
    /// opens, since libcurl may go on to another address, and by a redirect hop.
    private var socketShortage = false
    /// The accepted response's `.part` reader or digest eventfd could not be opened for want of a
    /// descriptor: the agent's shortage, which costs no attempt.
    private var writeShortage = false

    private func apply(_ decision: ResumeDecision) -> Bool {
        do {
            switch decision {
            case .write(let offset, let size):
                if let size, size > request.maxFileSize {
                    state = .failed(Failure(.tooLarge, "server announced \(size) bytes, over max_file_size"))
                    return false
                }
                if let size, request.minFreeSpace > 0 {
                    let free = try FileSystem.availableBytes(in: part.folder)
                    if free - (size - offset) < request.minFreeSpace {
                        state = .failed(Failure(.noSpace, "\(size - offset) more bytes would leave less than "
                            + "min_free_space (\(request.minFreeSpace)) free in \(part.folder.path)"))
                        return false
                    }
                }
                try begin(at: offset, total: size)
                state = .writing
                accepted?()
            case .alreadyComplete:
                appendedFrom = requestedOffset
                digest = try DownloadDigest.start(for: part, algorithms: digestAlgorithms, available: requestedOffset,
                                                  total: nil)
                state = .alreadyComplete
                return false
            case .restart(let reason):
                state = .restarting(reason)
                return false
            case .fail(let failure):
                state = .failed(failure)
                return false
            }
        } catch {
            // The `.part`'s reader or the digest worker's eventfd (files of 8 MiB and more).
            writeShortage = DescriptorLimit.isShortage(error)
            state = .failed(Failure(error.isNoSpace ? .noSpace : .internal, error.description))
            return false
        }
        return true
    }

    /// Positions the file for the body and records the validators a later resume will send.
    private func begin(at offset: Int64, total size: Int64?) throws(SystemError) {
        if offset == 0, requestedOffset > 0 { restartedFromZero?() }
        try part.truncate(to: offset)
        appendedFrom = offset
        total = size
        digest = try DownloadDigest.start(for: part, algorithms: digestAlgorithms, available: part.size, total: size)
        part.describe(url: Redaction.url(request.url), mirror: request.mirror, etag: response[.etag],
                      lastModified: response[.lastModified], total: size, modified: remoteModified)
        // The validators reach the record (in place, unsynced) before the body does, so that a
        // kill at any moment on this boot resumes all of the data written. Small files are cheaper
        // to fetch again: theirs waits for the periodic checkpoint, unless the record on disk
        // names an earlier response's validator, which must never cover these bytes.
        if (size ?? Int64.max) >= Transfer.recordThreshold || part.savedRecordVouches { try part.saveRecord() }
    }

    /// What the accepted response says about splitting (SegmentCheck.maySplit): its status, the
    /// file's size, Accept-Ranges and its strong validator.
    var splitFacts: SegmentCheck.FirstResponse {
        SegmentCheck.FirstResponse(
            status: response.status, total: total, acceptRanges: response[.acceptRanges],
            validator: SegmentCheck.strongValidator(etag: response[.etag], lastModified: response[.lastModified],
                                                    date: response[.date]))
    }

    /// The download was split: its digest is taken over by the segmented download, which hashes
    /// the file in piece-map order (SegmentedDownload).
    func dropDigest() {
        digest = nil
    }

    /// Files at least this big get their validators recorded before the first body byte.
    static let recordThreshold: Int64 = 64 << 10

    // MARK: - Completion

    /// When libcurl's `code` ends this transfer as a completed download: tells its hashing worker
    /// where the data ends and returns the descriptor to poll until the digests are ready, so that
    /// `finish` does not wait on the event loop; nil when nothing is left to wait for.
    func digestPending(after code: CURLcode) -> Int32? {
        switch state {
        case .alreadyComplete: break
        case .writing where code == CURLE_OK && blockedAddress == nil && (total == nil || written == total): break
        default: return nil
        }
        return digest?.end(size: written)
    }

    /// Turns libcurl's result (from curl_multi_info_read(3)) into the attempt's outcome.
    func finish(_ code: CURLcode) -> TransferOutcome {
        if let segment, let outcome = finishSegment(code, segment) { return outcome }
        let current = TransferProtocol(of: easy, fallback: kind)
        let status = current.isFileBased ? 0 : easy.info(long: CURLINFO_RESPONSE_CODE)
        // FTP reply codes and SSH results are not HTTP statuses: `http_status` is null for them.
        let httpStatus = status == 0 ? nil : status
        switch state {
        case .restarting(let reason):
            return .restart(reason: reason)
        case .redirecting(let location):
            return .redirect(location: location, httpStatus: response.status)
        case .failed(let failure):
            return .failed(TransferFailure(failure: failure, httpStatus: httpStatus,
                                           retryAfter: RetryAfter.delay(from: easy), bytes: written,
                                           resumedFrom: appendedFrom, isFinal: failure.kind == .auth,
                                           outOfDescriptors: writeShortage))
        case .alreadyComplete:
            return complete(httpStatus: httpStatus)
        case .segmentComplete:
            return .completed(TransferResult(bytes: written, sha256: nil, httpStatus: httpStatus, resumedFrom: requestedOffset))
        case .awaitingResponse, .writing:
            if let blockedAddress {
                return .failed(TransferFailure(
                    failure: Failure(.blocked, "refused to connect to \(blockedAddress): a private or local address (block_private_addresses)"),
                    httpStatus: nil, retryAfter: nil, bytes: written, resumedFrom: appendedFrom, isFinal: true))
            }
            if let refusal = hostKeyCheck?.refusal {
                return .failed(TransferFailure(failure: Failure(.auth, refusal), httpStatus: nil, retryAfter: nil,
                                               bytes: written, resumedFrom: appendedFrom, isFinal: true))
            }
            if code != CURLE_OK {
                if current.isFileBased, requestedOffset > 0, case .awaitingResponse = state, FileResume.isUnusableOffset(code) {
                    return .restart(reason: "the remote file no longer fits the \(requestedOffset) bytes already fetched "
                        + "(\(CurlError(code).message))")
                }
                let error = CurlError(code, detail: easy.errorDetail.map { Redaction.url($0) })
                // A proxy that refused the CONNECT tunnel (407, 403…) answered like a server: its status counts.
                let connectStatus = easy.info(long: CURLINFO_HTTP_CONNECTCODE)
                if connectStatus >= 400 {
                    return .failed(TransferFailure(
                        failure: Failure(.httpStatus, "the proxy answered CONNECT with HTTP \(connectStatus)"),
                        httpStatus: connectStatus, retryAfter: nil, bytes: written, resumedFrom: appendedFrom))
                }
                let failure = current.isFileBased ? classifyFile(error, current) : classify(error)
                // A socket(2) that failed so, or a connection or lookup that failed while the agent
                // has no descriptor left (libcurl's resolver thread takes a socketpair). Either way
                // no byte came on this request.
                if code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST,
                   socketShortage || DescriptorLimit.isExhausted() {
                    return .failed(TransferFailure(failure: failure, httpStatus: nil, retryAfter: nil, bytes: written,
                                                   resumedFrom: appendedFrom, outOfDescriptors: true))
                }
                return .failed(TransferFailure(failure: failure,
                                               httpStatus: httpStatus, retryAfter: nil,
                                               bytes: written, resumedFrom: appendedFrom, isFinal: failure.kind == .auth))
            }
            if case .awaitingResponse = state {
                let accepted = current.isFileBased ? decideFile(bodyEnded: true) : decide(status: status)
                guard accepted else { return finish(code) }
            }
            if let total, written != total {
                return .failed(TransferFailure(
                    failure: Failure(.network, "short body: \(written) of \(total) bytes"),
                    httpStatus: httpStatus, retryAfter: nil, bytes: written, resumedFrom: appendedFrom))
            }
            return complete(httpStatus: httpStatus)
        }
    }

    /// The failure for a libcurl error on an FTP or SFTP transfer: a refused login or host key is
    /// `auth`; the last FTP reply code is named in the message (it is not an HTTP status).
    private func classifyFile(_ error: CurlError, _ current: TransferProtocol) -> Failure {
        let reply = current == .ftp ? easy.info(long: CURLINFO_RESPONSE_CODE) : 0
        let message = reply > 0 ? "\(error.description) (last FTP reply \(reply))" : error.description
        return Failure(error.kind(over: current), "\(current.name): \(message)")
    }

    /// The failure for a libcurl error, judged with the response seen so far: a malformed URL
    /// after a 3xx is the server's bad `Location` (`redirect`), not the job's; running out of
    /// memory (libcurl < 8.6) or CURLE_TOO_LARGE after a status line means the server's header
    /// block exceeded libcurl's 100 KB limit (`network`), not that the host is short of memory.
    private func classify(_ error: CurlError) -> Failure {
        if error.curlCode == CURLE_FILESIZE_EXCEEDED {
            return Failure(.tooLarge, "larger than max_file_size (\(request.maxFileSize) bytes)")
        }
        let status = response.status
        guard case .awaitingResponse = state, status != 0 else { return Failure(error.kind, error.description) }
        if error.curlCode == CURLE_URL_MALFORMAT, (300...399).contains(status) {
            return Failure(.redirect, "HTTP \(status) with an unusable Location: \(error.description)")
        }
        if error.curlCode == CURLE_OUT_OF_MEMORY || error.code == 100 {
            return Failure(.network, "HTTP \(status) with headers over libcurl's limit: \(error.description)")
        }
        return Failure(error.kind, error.description)
    }

    private func complete(httpStatus: Int?) -> TransferOutcome {
        let digests: [Checksum.Algorithm: String]
        // The error (and the part's path in it) made only when there is no digest to finish.
        let finished = digest?.finish(size: written) ?? (digestAlgorithms.isEmpty ? .success([:])
            : .failure(SystemError(code: EIO, operation: "hash (no response accepted)", path: part.path)))
        switch finished {
        case .success(let values): digests = values
        case .failure(let error):
            return .failed(TransferFailure(failure: Failure(.internal, error.description), httpStatus: httpStatus,
                                           retryAfter: nil, bytes: written, resumedFrom: appendedFrom))
        }
        if let checksum = request.checksum {
            let actual = digests[checksum.algorithm] ?? ""
            if actual != checksum.hex {
                return .failed(TransferFailure(
                    failure: Failure(.checksumMismatch, "\(checksum.algorithm.rawValue) is \(actual), expected \(checksum.hex)"),
                    httpStatus: httpStatus, retryAfter: nil, bytes: written, resumedFrom: appendedFrom))
            }
        }
        return .completed(TransferResult(bytes: written, sha256: request.digest == .sha256 ? digests[.sha256] : nil,
                                         httpStatus: httpStatus, resumedFrom: appendedFrom,
                                         contentDisposition: response[.contentDisposition]))
    }

}

// The callbacks borrow their transfer (`_withUnsafeGuaranteedRef`): the easy handle is only ever
// in the multi handle while its Transfer lives, and a retain and release a call cost more than
// a short header line.
private let transferHeaderCallback: dfc_data_callback = { pointer, size, count, context in
    guard let pointer, let context else { return 0 }
    let length = size * count
    return Unmanaged<Transfer>.fromOpaque(context)._withUnsafeGuaranteedRef { transfer in
        transfer.receiveHeader(UnsafeRawBufferPointer(start: pointer, count: length)) ? length : 0
    }
}

private let transferOpenSocketCallback: dfc_opensocket_callback = { context, _, address in
    guard let context, let address else { return CURL_SOCKET_BAD }
    return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().openSocket(address)
}

private let transferWriteCallback: dfc_data_callback = { pointer, size, count, context in
    guard let pointer, let context else { return 0 }
    return Unmanaged<Transfer>.fromOpaque(context)._withUnsafeGuaranteedRef { transfer in
        admitAndReceive(transfer, pointer, size * count)
    }
}

/// CURLOPT_WRITEFUNCTION's body: the receive budget and admission may pause the transfer first.
private func admitAndReceive(_ transfer: Transfer, _ pointer: UnsafeMutablePointer<CChar>, _ length: Int) -> Int {
    if let budget = transfer.receiveBudget, !budget.admit(transfer, bytes: length) {
        transfer.easy.hasPaused = true
        return Int(CURL_WRITEFUNC_PAUSE)
    }
    if let admit = transfer.admit, !admit(length) {
        transfer.easy.hasPaused = true
        return Int(CURL_WRITEFUNC_PAUSE)
    }
    return transfer.receiveBody(UnsafeRawBufferPointer(start: pointer, count: length)) ? length : 0
}

extension Duration {
    /// Whole milliseconds, rounded down and saturating at Int's bounds, for libcurl's `_MS`
    /// options and poll timeouts.
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = Int(clamping: seconds).multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, carry) = scaled.addingReportingOverflow(Int(attoseconds / 1_000_000_000_000_000))
        return carry ? (seconds < 0 ? .min : .max) : total
    }
}
