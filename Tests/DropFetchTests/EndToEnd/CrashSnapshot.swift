import Foundation

/// What a crash left on disk for each job, which decides the requests a later run may make:
/// none for a job already filed or published, a `Range` request from the `.part` size for data
/// its resume record counts as durable, and a fresh fetch only for data that cannot be validated.
struct CrashSnapshot {
    enum Progress: Equatable, CustomStringConvertible {
        /// The job file is in done/ or failed/.
        case filed
        /// The final file has its name, the job is not filed yet.
        case published
        /// A `.part` of this many bytes with its resume record.
        case resumable(Int)
        /// A `.part` without a resume record: nothing to validate it against.
        case unvalidated
        /// Nothing on disk yet.
        case untouched

        var description: String {
            switch self {
            case .filed: "filed"
            case .published: "published"
            case .resumable(let size): "resumable from \(size)"
            case .unvalidated: "unvalidated .part"
            case .untouched: "untouched"
            }
        }
    }

    /// The length of the server's request log when the crash was observed.
    let requestCount: Int
    let progress: [String: Progress]

    init(audit: SpoolAudit, jobs: [SpoolAudit.ExpectedJob], requestCount: Int) {
        self.requestCount = requestCount
        let records = audit.jobRecords()
        var progress: [String: Progress] = [:]
        for job in jobs {
            let part = audit.destination + "/." + job.file + ".part"
            let partSize = (try? FileManager.default.attributesOfItem(atPath: part)[.size] as? Int) ?? nil
            if (records[job.name] ?? []).contains(where: { $0.hasPrefix("done/") || $0.hasPrefix("failed/") }) {
                progress[job.name] = .filed
            } else if FileManager.default.fileExists(atPath: audit.destination + "/" + job.file) {
                progress[job.name] = .published
            } else if let partSize, partSize > 0 {
                progress[job.name] = CrashSnapshot.resumableBytes(part: part, size: partSize).map { .resumable($0) } ?? .unvalidated
            } else {
                progress[job.name] = .untouched
            }
        }
        self.progress = progress
    }

    /// The bytes a restart may resume, provided the resume record names a validator (ETag or
    /// Last-Modified): the whole `.part` when the record was written on this boot (the page cache
    /// outlived the killed agent), else those it counts as fsynced; nil when nothing is vouched for.
    static func resumableBytes(part: String, size: Int) -> Int? {
        guard let data = FileManager.default.contents(atPath: part + ".json"),
              let record = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              record["etag"] != nil || record["lastModified"] != nil,
              let bytes = record["bytes"] as? Int else { return nil }
        let sameBoot = (record["boot"] as? String).map { $0 == CrashSnapshot.bootID } ?? false
        let trusted = min(size, (record["size"] as? Int) ?? size)
        let resumable = sameBoot ? trusted : min(trusted, bytes)
        return resumable > 0 ? resumable : nil
    }

    static let bootID = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines)

    /// Jobs in one state of progress.
    func jobs(_ wanted: Progress) -> [String] {
        progress.filter { $0.value == wanted }.map(\.key).sorted()
    }

    /// The request log by path, with each request's position in the log (from 0).
    typealias RequestIndex = [String: [(position: Int, request: TestHTTPServer.LoggedRequest)]]

    static func index(_ log: [TestHTTPServer.LoggedRequest]) -> RequestIndex {
        var index: RequestIndex = [:]
        for (position, request) in log.enumerated() { index[request.path, default: []].append((position, request)) }
        return index
    }

    /// Requests after this crash that should not have been made: any for a filed or published
    /// job, and for resumable data a first request that does not ask for `bytes=SIZE-`, or is
    /// answered 200 when the path honours ranges (it is not in `ignoringRange`).
    func laterRequestProblems(_ index: RequestIndex, jobs: [SpoolAudit.ExpectedJob],
                              ignoringRange: Set<String> = []) -> [String] {
        var problems: [String] = []
        for job in jobs {
            let requests = (index[job.path] ?? []).filter { $0.position >= requestCount }.map(\.request)
            switch progress[job.name] ?? .untouched {
            case .filed, .published:
                if !requests.isEmpty {
                    problems.append("\(job.path) was requested \(requests.count) more time(s) after its job was \(progress[job.name]!)")
                }
            case .resumable(let size):
                guard let first = requests.first else { continue }
                if first.header("Range") != "bytes=\(size)-" {
                    problems.append("\(job.path): \(size) bytes with a resume record, but the next request had Range \(first.header("Range") ?? "none")")
                } else if !ignoringRange.contains(job.path), first.status == 200 {
                    problems.append("\(job.path): resumed from \(size) but fetched whole again")
                }
            case .unvalidated, .untouched:
                break
            }
        }
        return problems
    }

    /// Paths fetched completely (200 with the whole body) more than once by one run, where runs
    /// are the stretches of `log` between the request counts in `boundaries`.
    static func repeatedFetches(_ log: [TestHTTPServer.LoggedRequest], boundaries: [Int],
                                jobs: [SpoolAudit.ExpectedJob]) -> [String] {
        let sizes = Dictionary(jobs.map { ($0.path, $0.body.count) }) { first, _ in first }
        var problems: [String] = []
        let cuts = [0] + boundaries.sorted() + [log.count]
        for (start, end) in zip(cuts, cuts.dropFirst()) where start < end {
            var complete: [String: Int] = [:]
            for request in log[start..<end] where request.status == 200 && request.bodyBytesSent == sizes[request.path] {
                complete[request.path, default: 0] += 1
            }
            for (path, count) in complete.sorted(by: { $0.key < $1.key }) where count > 1 {
                problems.append("\(path) was fetched whole \(count) times by one run (requests \(start + 1)…\(end))")
            }
        }
        return problems
    }
}
