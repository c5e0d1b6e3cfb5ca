/// Every config key with its value and default: dropfetch.yaml(5)'s source, held to the loader's keys by ConfigReferenceTests.
public enum ConfigReference {
    /// One key: its dotted path (`[]` a list item, `NAME` a class), the value it takes, what it does and its default.
    public struct Entry: Sendable, Equatable {
        public var key: String
        public var value: String
        public var meaning: String
    }

    /// The man page's sections, in order, each with the keys it lists.
    public static let sections: [(title: String, entries: [Entry])] = [
        ("Spool and files", [
            Entry(key: "spool", value: "path", meaning: "The spool folder (inbox/, work/, done/, failed/, hold/). Default: ./spool."),
            Entry(key: "destination", value: "path", meaning: "Where downloads go. Default: <spool>/downloads."),
            Entry(key: "agent_id", value: "string", meaning: "This agent's name (its work folder work/<agent_id>/). Default: the host name."),
            Entry(key: "on_conflict", value: "rename | overwrite | fail", meaning: "A file of the same name in the destination. Default: rename."),
            Entry(key: "content_disposition", value: "bool", meaning: "Name the file after the server's Content-Disposition. Default: false."),
            Entry(key: "duplicates", value: "off | skip", meaning: "skip: a job whose every URL a job still in done/ fetched (its file still there, with its size) is filed in done/ as a duplicate of it, with no request (a job file's duplicates=fetch fetches anyway). Default: off."),
            Entry(key: "fsync", value: "bool", meaning: "fsync files and folders before a job is filed. Default: true."),
            Entry(key: "digest", value: "sha256 | none", meaning: "Digest of every download in its status file. Default: sha256."),
            Entry(key: "file_mode", value: "octal string", meaning: "Mode of downloaded files, whatever the umask. Default: \"0644\"."),
            Entry(key: "scan_interval", value: "duration", meaning: "Full inbox rescan besides inotify (for NFS); 0 never. Default: 30s."),
            Entry(key: "lease", value: "duration", meaning: "How long the agent acts on its jobs after its last renewal of work/<agent>/.lease (renewed every quarter of it); when a renewal is late it stops (fenced) and others adopt its jobs after the lease and a margin. At least 1s. Default: 10s."),
            Entry(key: "log_level", value: "trace | debug | info | notice | warning | error | critical", meaning: "Least level logged. Default: info."),
            Entry(key: "metrics_file", value: "path | null", meaning: "Prometheus text file written as counters change. Default: none."),
            Entry(key: "status_page", value: "path | null", meaning: "Self-contained HTML status page (and status.json beside it). Default: none."),
        ]),
        ("Queue", [
            Entry(key: "concurrency.total", value: "integer", meaning: "Connections open at once, all downloads together. Default: 4."),
            Entry(key: "concurrency.per_host", value: "integer", meaning: "Connections open at once to one server. Default: 2."),
            Entry(key: "order", value: "fifo | lifo", meaning: "Order of jobs of equal priority. Default: fifo."),
            Entry(key: "claim_ahead", value: "integer", meaning: "Jobs claimed beyond those running. Default: concurrency.total."),
            Entry(key: "once_wait", value: "duration", meaning: "How long run --once waits for retries and settling files. Default: 1m."),
            Entry(key: "retry.attempts", value: "integer", meaning: "Tries in all, the first included. Default: 5."),
            Entry(key: "retry.initial_delay", value: "duration", meaning: "Delay before the first retry, doubled each time. Default: 10s."),
            Entry(key: "retry.max_delay", value: "duration", meaning: "Longest delay between tries. Default: 30m."),
            Entry(key: "retry.on_http", value: "list of statuses", meaning: "HTTP statuses worth a retry. Default: [408, 429, 500, 502, 503, 504]."),
        ]),
        ("Limits", [
            Entry(key: "limits.max_file_size", value: "size", meaning: "A larger download fails (too_large). Default: 50GB."),
            Entry(key: "limits.max_job_file_size", value: "size", meaning: "A larger job file is invalid. Default: 64KB."),
            Entry(key: "limits.connect_timeout", value: "duration", meaning: "Connection set-up time. Default: 30s."),
            Entry(key: "limits.low_speed.bytes_per_second", value: "size", meaning: "A transfer slower than this for low_speed.for fails (timeout); 0 off. Default: 1KB."),
            Entry(key: "limits.low_speed.for", value: "duration", meaning: "How long a transfer may be that slow. Default: 60s."),
            Entry(key: "limits.rate_limit", value: "size", meaning: "Bytes per second for all transfers together; 0 none. Default: 0."),
            Entry(key: "limits.min_free_space", value: "size", meaning: "A download waits (no_space) rather than leave less free; 0 no check. Default: 0."),
            Entry(key: "limits.timeout", value: "duration", meaning: "Longest time of one attempt; 0 none. Default: 0."),
            Entry(key: "max_redirects", value: "integer", meaning: "Redirects followed per request. Default: 10."),
            Entry(key: "split.connections", value: "1-16", meaning: "Connections one HTTP(S) download may use; counted against concurrency and a class's max_active. Default: 1."),
            Entry(key: "split.min_size", value: "size", meaning: "Least piece size; a download is split only when twice this remains. Default: 20MiB."),
        ]),
        ("Network", [
            Entry(key: "protocols", value: "list", meaning: "URL schemes allowed: http, https, ftp, ftps, sftp. Default: [http, https]."),
            Entry(key: "block_private_addresses", value: "bool", meaning: "Refuse loopback, private and link-local addresses. Default: false."),
            Entry(key: "tls.ca_file", value: "path | null", meaning: "CA bundle instead of the system store. Default: null."),
            Entry(key: "tls.ca_path", value: "path | null", meaning: "CA folder instead of the system store. Default: null."),
            Entry(key: "tls.client_cert", value: "path | null", meaning: "Client certificate (PEM). Default: null."),
            Entry(key: "tls.client_key", value: "path | null", meaning: "Its key (PEM). Default: null."),
            Entry(key: "ftp.tls", value: "none | try | require", meaning: "Explicit TLS on ftp:// URLs. Default: try."),
            Entry(key: "ftp.passive", value: "bool", meaning: "EPSV/PASV rather than active mode. Default: true."),
            Entry(key: "sftp.known_hosts", value: "path | null", meaning: "Known host keys; an unknown key fails. Default: ~/.ssh/known_hosts."),
            Entry(key: "sftp.key_file", value: "path | null", meaning: "Private key. Default: null."),
            Entry(key: "sftp.key_passphrase_file", value: "path | null", meaning: "File holding the key's passphrase. Default: null."),
            Entry(key: "proxy", value: "URL | \"\" | null", meaning: "Proxy for every request; \"\" none, not even from the environment; null the environment's. Default: null."),
            Entry(key: "no_proxy", value: "string | null", meaning: "Hosts reached without the proxy, as curl's NO_PROXY. Default: null."),
            Entry(key: "netrc", value: "bool | path", meaning: "Credentials from ~/.netrc (true) or this file. Default: false."),
        ]),
        ("Classes", [
            Entry(key: "classes[].name", value: "string", meaning: "The class's name, as a job file's class= gives it."),
            Entry(key: "classes[].match.folder", value: "string", meaning: "Jobs dropped into inbox/<folder>/."),
            Entry(key: "classes[].match.url", value: "glob", meaning: "Jobs whose URL matches."),
            Entry(key: "classes[].match.host", value: "glob", meaning: "Jobs whose host matches."),
            Entry(key: "classes[].priority", value: "integer", meaning: "Higher runs first; a job's priority= overrides it. Default: 0."),
            Entry(key: "classes[].max_active", value: "integer", meaning: "Connections of the class open at once. Default: no limit of its own."),
            Entry(key: "classes[].destination", value: "path", meaning: "Instead of the top-level destination."),
            Entry(key: "classes[].rate_limit", value: "size", meaning: "Bytes per second for the class; 0 none."),
            Entry(key: "classes[].retry", value: "mapping", meaning: "As retry; keys left out come from the top level."),
            Entry(key: "classes[].split", value: "mapping", meaning: "As split; keys left out come from the top level."),
            Entry(key: "classes[].tls", value: "mapping", meaning: "As tls, for the class's jobs."),
            Entry(key: "classes[].ftp", value: "mapping", meaning: "As ftp, for the class's jobs."),
            Entry(key: "classes[].sftp", value: "mapping", meaning: "As sftp, for the class's jobs."),
            Entry(key: "classes[].proxy", value: "URL | \"\" | null", meaning: "As proxy, for the class's jobs."),
            Entry(key: "classes[].no_proxy", value: "string | null", meaning: "As no_proxy, for the class's jobs."),
            Entry(key: "classes[].netrc", value: "bool | path", meaning: "As netrc, for the class's jobs."),
        ]),
        ("Hooks", [
            Entry(key: "hooks.on_done", value: "argv list", meaning: "Run when a job finished (its status file on stdin)."),
            Entry(key: "hooks.on_failed", value: "argv list", meaning: "Run when a job failed for good."),
            Entry(key: "hooks.on_idle", value: "argv list", meaning: "Run when the queue drained."),
        ]),
        ("History", [
            Entry(key: "history.keep", value: "duration (s, m, h, d)", meaning: "A finished job's record pair in done/ or failed/ is removed once its finished time is older than this (at start-up, hourly, and at the end of run --once). Default: kept forever."),
            Entry(key: "history.max_jobs", value: "integer", meaning: "At most this many finished jobs are kept, done/ and failed/ together, the oldest removed first. Default: no limit."),
        ]),
        ("Schedule and quotas", [
            Entry(key: "schedule[].days", value: "Mon-Fri | Sat,Sun | daily", meaning: "Days of the window, local time. Default: daily."),
            Entry(key: "schedule[].time", value: "HH:MM-HH:MM", meaning: "The window's hours, local time; required."),
            Entry(key: "schedule[].rate_limit", value: "size", meaning: "limits.rate_limit while the window is in force."),
            Entry(key: "schedule[].concurrency", value: "integer", meaning: "concurrency.total while the window is in force."),
            Entry(key: "schedule[].pause", value: "true | new | false", meaning: "No new transfer starts (true: running ones pause too; new: they finish); jobs stay in the inbox and run --once exits 75."),
            Entry(key: "schedule[].classes.NAME.rate_limit", value: "size", meaning: "The class's rate limit while the window is in force."),
            Entry(key: "schedule[].classes.NAME.max_active", value: "integer", meaning: "The class's max_active while the window is in force."),
            Entry(key: "quota[].period", value: "daily | weekly | monthly", meaning: "The quota's period, reset at local midnight (Monday, the 1st)."),
            Entry(key: "quota[].bytes", value: "size", meaning: "Bytes the period allows, counted across restarts and every agent of the spool."),
            Entry(key: "quota[].class", value: "string", meaning: "Only this class's downloads count and stop. Default: every job."),
            Entry(key: "quota[].running", value: "finish | pause", meaning: "What running transfers do once it is used up; new ones wait for the reset (run --once exits 75). Default: finish."),
        ]),
    ]

    /// Every entry, in the man page's order.
    public static var entries: [Entry] { sections.flatMap(\.entries) }

    /// The keys directly below `parent` (`""` for the top level, `classes[]`, `limits.low_speed`), in table order.
    public static func children(of parent: String) -> [String] {
        var seen: [String] = []
        let prefix = parent.isEmpty ? "" : parent + "."
        for entry in entries where entry.key.hasPrefix(prefix) {
            let rest = entry.key.dropFirst(prefix.count)
            guard let first = rest.split(separator: ".").first else { continue }
            let name = String(first.hasSuffix("[]") ? first.dropLast(2) : first)
            if !seen.contains(name) { seen.append(name) }
        }
        return seen
    }
}
