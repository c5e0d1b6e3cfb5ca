import Glibc

/// Gives a complete `.part` its final name through the group commit: data durable → folder checked
/// to be still below the destination root → rename under `on_conflict` → folder durable; then the
/// job is filed or its state saved. No fsync runs on the loop thread.
final class JobPublisher: AgentPart {
    let context: AgentContext
    unowned var runner: JobRunner!
    unowned var filer: JobFiler!
    unowned var names: OutputNames!

    init(context: AgentContext) {
        self.context = context
    }

    func publish(_ part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) {
        job.downloads[index].phase = .publishing
        context.groupCommit.sync([.file(part.file)]) { [self] error in
            guard isPublishing(part, of: job, index) else { return }
            if let error { return failed(job, index, result, Failure(JobPublisher.kind(of: error), error.description)) }
            crashPlan?.reach(.dataComplete)
            rename(part, result, job, index)
        }
    }

    /// Whether the download still waits to publish `part` (it was not held, cancelled or removed meanwhile).
    private func isPublishing(_ part: PartFile, of job: Job, _ index: Int) -> Bool {
        table.job(job.id) === job && job.downloads[index].phase == .publishing && job.downloads[index].part === part
    }

    private func rename(_ part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) {
        var target = part.finalName
        if config.contentDisposition, job.downloads[index].spec.out == nil,
           let header = result.contentDisposition, let name = FileName.fromContentDisposition(header) {
            target = name
        }
        do throws(Failure) {
            do {
                guard try names.destinationRoot(of: job).stillContains(part.folder) else {
                    throw Failure(.invalidJob, "\(part.folder.path) was moved or replaced while in use; not published into")
                }
                switch config.onConflict {
                case .overwrite:
                    try part.folder.rename(part.name, to: target)
                case .fail:
                    try part.folder.moveNoReplace(part.name, to: part.folder, as: target)
                case .rename:
                    target = try publishUnderFreeName(part, preferring: target)
                }
            } catch let error as SystemError {
                throw Failure(JobPublisher.kind(of: error), error.description)
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure(.internal, "\(error)")
            }
        } catch {
            return failed(job, index, result, error)
        }
        context.groupCommit.sync([.folder(part.folder)]) { [self] error in
            guard isPublishing(part, of: job, index) else { return }
            // The file has its name: a retry would write into it, so a failed sync is reported, not retried.
            if let error { logger.error("the name of \(part.folder.path)/\(target) may not survive a power cut: \(error)") }
            published(part, as: target, result, job, index)
        }
    }

    private func published(_ part: PartFile, as target: String, _ result: TransferResult, _ job: Job, _ index: Int) {
        var status = job.downloads[index].status
        status.state = .done
        status.file = part.folder.path + "/" + target
        status.bytes = result.bytes
        status.size = nil
        status.httpStatus = result.httpStatus
        status.resumedFrom = result.resumedFrom
        status.sha256 = result.sha256
        status.error = nil
        job.downloads[index].status = status
        job.downloads[index].phase = .finished
        job.downloads[index].part = nil
        // The record proves the published file is this job's until the job's own record says so.
        job.downloads[index].publishedRecord = (part.folder, part.recordName, part.record)
        crashPlan?.reach(.published)
        if job.isFinished { filer.fileJob(job) } else { filer.saveState(job) }
    }

    /// The attempt ends unpublished; what follows is the runner's (next mirror, retry, failure).
    private func failed(_ job: Job, _ index: Int, _ result: TransferResult, _ failure: Failure) {
        runner.endAttempt(job, index, TransferFailure(failure: failure, httpStatus: result.httpStatus, retryAfter: nil,
                                                      bytes: result.bytes, resumedFrom: result.resumedFrom))
    }

    private static func kind(of error: SystemError) -> ErrorKind {
        error.code == EEXIST ? .exists : (error.isNoSpace ? .noSpace : .internal)
    }

    /// `on_conflict: rename`: the first of `x.iso`, `x.1.iso`, … that is free (renameat2 without replacing).
    private func publishUnderFreeName(_ part: PartFile, preferring name: String) throws(SystemError) -> String {
        for candidate in OutputNames.variants(of: name) {
            do {
                try part.folder.moveNoReplace(part.name, to: part.folder, as: candidate)
                return candidate
            } catch where error.code == EEXIST {
                continue
            }
        }
        throw SystemError(code: EEXIST, operation: "rename", path: part.finalPath)
    }
}
