/// The one check a parsed job passes before it is queued, made alike by the claim (on its worker),
/// by admission on the loop and by `dropfetch add`: every mirror's scheme in `protocols` (as
/// libcurl parses it, once, in `DownloadSpec.parts`), and the job's class found (docs/config.md).
struct JobAcceptance: Sendable {
    let spec: JobSpec
    /// The class the job runs in; nil for the default class.
    let jobClass: Config.JobClass?

    var className: String { jobClass?.name ?? "default" }
    /// `priority=` of the job file, else its class's, else 0.
    var priority: Int { spec.priority ?? jobClass?.priority ?? 0 }
    /// The host of the first download's first mirror: the lane the queue holds the job in.
    var host: String { spec.downloads.first?.host() ?? "" }

    /// Why a job that parses is refused.
    enum Refusal: Error, Sendable, Equatable {
        /// A mirror's scheme is not in `protocols` (`unsupported_protocol`).
        case unsupportedProtocol(url: String, scheme: String, line: Int)
        /// `class=` names no class of the config (`invalid_job`).
        case unknownClass(JobFileError)

        /// The refusal as the failure a status file records, for the job named `jobName`.
        func failure(jobName: String, protocols: [String]) -> Failure {
            switch self {
            case .unsupportedProtocol(_, let scheme, let line):
                return Failure(.unsupportedProtocol, "\(jobName): line \(line): scheme '\(scheme)' is not in protocols \(protocols)")
            case .unknownClass(let error):
                return Failure(.invalidJob, "\(jobName): \(error.message)")
            }
        }
    }

    /// Accepts `spec`, found in the routing folder `folder` of the inbox, under `config`.
    static func check(_ spec: JobSpec, folder: String, config: Config) -> Result<JobAcceptance, Refusal> {
        for download in spec.downloads {
            for (url, parts) in zip(download.urls, download.parts) {
                let scheme = parts?.scheme ?? ""
                guard config.protocols.contains(scheme) else {
                    return .failure(.unsupportedProtocol(url: url, scheme: scheme, line: download.line))
                }
            }
        }
        switch config.resolveClass(spec: spec, folder: folder) {
        case .success(let found): return .success(JobAcceptance(spec: spec, jobClass: found))
        case .failure(let error): return .failure(.unknownClass(error))
        }
    }
}
