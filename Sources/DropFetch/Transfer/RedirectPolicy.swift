/// Redirects are followed by the agent, one request per hop, never by libcurl
/// (CURLOPT_FOLLOWLOCATION is off): libcurl would send a job's `header=` values to whatever host a
/// `Location` names (it strips only `Authorization` and `Cookie`, and only on a change of host).
///
/// docs/job-files.md: a job's headers and credentials (`header=`, `user:pass@` in its URL, `http-user`)
/// go only to the origin (scheme, host, port) of the
/// job's own URL for the mirror being fetched. §3/§4: a hop to a scheme outside `protocols` is
/// `unsupported_protocol` (the same kind as a job URL with that scheme, and what libcurl's
/// CURLOPT_REDIR_PROTOCOLS_STR reported before); more than `max_redirects` hops, or a loop, is
/// `redirect`; an unusable `Location` is `redirect` (the server's fault, not the job's).
/// `block_private_addresses` needs nothing here: every hop is a new request through the same
/// CURLOPT_OPENSOCKETFUNCTION check, so a refused hop is `blocked` like a refused first request.
///
/// Pure: no I/O, only libcurl's URL parser (curl_url(3)).
enum RedirectPolicy {
    /// What to do with a 3xx answer that names a `Location`.
    enum Decision: Sendable {
        /// Fetch this request next (same download, same `.part`, same Range and If-Range).
        case follow(TransferRequest)
        /// Stop this mirror with this failure; not worth a retry of the same URL.
        case refuse(Failure)
    }

    /// The origin of a URL (RFC 6454 §4): scheme, host and port, the port defaulted from the
    /// scheme, as libcurl parses them.
    struct Origin: Sendable, Hashable, CustomStringConvertible {
        var scheme: String
        var host: String
        var port: Int?

        init(scheme: String, host: String, port: Int?) {
            self.scheme = scheme
            self.host = host
            self.port = port
        }

        init?(_ url: String) {
            guard let parsed = try? CurlURL(url) else { return nil }
            self.init(parsed)
        }

        init?(_ url: CurlURL) {
            guard let scheme = url.scheme, let host = url.host else { return nil }
            self.init(scheme: scheme, host: host, port: url.port)
        }

        var description: String { "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "") }
    }

    /// The request for the hop that `location` (from a `status` answer to `request`) names.
    static func follow(_ request: TransferRequest, to location: String, status: Int) -> Decision {
        let current = request.target
        let next: CurlURL
        do {
            next = try CurlURL(location, relativeTo: current)
        } catch {
            return .refuse(Failure(.redirect, "HTTP \(status) with an unusable Location (\(error)): \(Redaction.url(location))"))
        }
        let shown = Redaction.url(next.string ?? location)
        guard let scheme = next.scheme, request.protocols.contains(where: { $0.lowercased() == scheme }) else {
            return .refuse(Failure(.unsupportedProtocol,
                                   "HTTP \(status) redirects to \(shown): \(next.scheme ?? "its scheme") is not in protocols"))
        }
        guard let origin = Origin(next) else {
            return .refuse(Failure(.redirect, "HTTP \(status) with an unusable Location (no host): \(shown)"))
        }
        let count = (request.redirect?.count ?? 0) + 1
        guard count <= request.maxRedirects else {
            return .refuse(Failure(.redirect, "more than \(request.maxRedirects) redirects (max_redirects); the next was \(shown)"))
        }
        // The job's credentials go with the job's origin only; a server's own `user@` never does.
        let job = try? CurlURL(request.url)
        let sameOrigin = job.flatMap(Origin.init) == origin
        do {
            try next.setCredentials(user: sameOrigin ? job?.user : nil, password: sameOrigin ? job?.password : nil)
        } catch {
            return .refuse(Failure(.redirect, "HTTP \(status) with an unusable Location (\(error)): \(shown)"))
        }
        guard let target = next.string else {
            return .refuse(Failure(.redirect, "HTTP \(status) with an unusable Location: \(shown)"))
        }
        let visited = request.redirect?.visited ?? [key(request.url)]
        let targetKey = key(target)
        if visited.contains(targetKey) {
            return .refuse(Failure(.redirect, "redirect loop: \(shown) was already requested"))
        }
        var hop = request
        hop.redirect = RedirectHop(url: target, count: count, sameOrigin: sameOrigin, visited: visited + [targetKey])
        return .follow(hop)
    }

    /// A URL as compared for loops: normalised by libcurl, without userinfo and fragment.
    static func key(_ url: String) -> String {
        guard let parsed = try? CurlURL(url) else { return url }
        try? parsed.setCredentials(user: nil, password: nil)
        try? parsed.clearFragment()
        return parsed.string ?? url
    }

    /// The job's `header=` lines for a request to `request.target`: all of them for the job
    /// URL's own origin, none elsewhere. (Range and If-Range are the transfer's own, sent to every
    /// hop: they carry no secret, and a resumed download needs them wherever the data is.)
    static func headers(for request: TransferRequest) -> [String] {
        guard let redirect = request.redirect else { return request.headers }
        return redirect.sameOrigin ? request.headers : []
    }

    /// The job's `http-user`/`ftp-user` credentials (CURLOPT_USERNAME, CURLOPT_PASSWORD) under the
    /// same rule: for the job URL's own origin only.
    static func credentials(for request: TransferRequest) -> DownloadSpec.Credentials? {
        guard let redirect = request.redirect else { return request.credentials }
        return redirect.sameOrigin ? request.credentials : nil
    }
}

/// Where redirects have led one download attempt so far.
struct RedirectHop: Sendable, Equatable {
    /// The absolute URL this request fetches, with the job's credentials only on its own origin.
    var url: String
    /// Redirects followed to get here (1 for the first hop).
    var count: Int
    /// Whether `url` has the origin of the job's URL (then its headers and credentials go along).
    var sameOrigin: Bool
    /// Every URL requested so far, the job's own first (as `RedirectPolicy.key`).
    var visited: [String]
}

extension TransferRequest {
    /// The URL this request fetches: where redirects led, or the job's own.
    var target: String { redirect?.url ?? url }
}
