import Glibc

/// Gives a complete `.part` its final name through the group commit: data durable → folder checked
/// to be still below the destination root → rename under `on_conflict` (both on the finish-steps
/// worker, `PartPublication`) → folder durable; then the job is filed or its state saved. No fsync
/// and no rename runs on the loop thread.
final class JobPublisher: AgentPart {
    let context: AgentContext
    unowned var runner: JobRunner!
    unowned var filer: JobFiler!
    unowned var names: OutputNames!

    init(context: AgentContext) {
        self.context = context
    }

    func publish(_ part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) {
        job.apply(.publishing, to: index)
        context.groupCommit.sync([.file(part.file)]) { [self] error in
            guard isPublishing(part, of: job, index) else { return }
            if let error { return failed(job, index, result, Failure(PartPublication.kind(of: error), error.description)) }
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
        let root: DirectoryHandle
        do {
            root = try names.destinationRoot(of: job)
        } catch {
            return failed(job, index, result, Failure(PartPublication.kind(of: error), error.description))
        }
        let publication = PartPublication(part, as: target, below: root, onConflict: config.onConflict)
        publications[ObjectIdentifier(part)] = publication
        context.finishSteps.sync([.task(publication)]) { [self] _ in
            // Held meanwhile: the file keeps its record, which proves it is the job's (`discard` for a cancel).
            guard isPublishing(part, of: job, index) else {
                publications[ObjectIdentifier(part)] = nil
                return
            }
            switch publication.ending {
            case .published(let target): syncFolder(part, as: target, result, job, index)
            case .failed(let failure):
                publications[ObjectIdentifier(part)] = nil
                failed(job, index, result, failure)
            }
        }
    }

    /// Publications on their way, by part, until the published name is durable.
    private var publications: [ObjectIdentifier: PartPublication] = [:]

    /// Removes the data of a download whose job left while it was being published and is not
    /// kept (cancelled, deleted): after the rename on its way, under the published name too.
    func discard(_ part: PartFile) {
        let publication = publications.removeValue(forKey: ObjectIdentifier(part))
        context.finishSteps.sync([.task(PartRemoval(part, publication: publication))]) { _ in }
    }

    /// The published name made durable (the folder's fsync), then the download is done.
    private func syncFolder(_ part: PartFile, as target: String, _ result: TransferResult, _ job: Job, _ index: Int) {
        context.groupCommit.sync([.folder(part.folder)]) { [self] error in
            publications[ObjectIdentifier(part)] = nil
            guard isPublishing(part, of: job, index) else { return }
            // The file has its name: a retry would write into it, so a failed sync is reported, not retried.
            if let error { logger.error("the name of \(part.folder.path)/\(target) may not survive a power cut: \(error)") }
            published(part, as: target, result, job, index)
        }
    }

    private func published(_ part: PartFile, as target: String, _ result: TransferResult, _ job: Job, _ index: Int) {
        let effects = job.apply(.published(file: part.folder.path + "/" + target, result: result), to: index)
        job.releasePart(of: index)
        // The record proves the published file is this job's until the job's own record says so.
        job.notePublished((part.folder, part.recordName, part.record), for: index)
        crashPlan?.reach(.published)
        runner.carryOut(effects, job, index)
    }

    /// The attempt ends unpublished; what follows is the runner's (next mirror, retry, failure).
    private func failed(_ job: Job, _ index: Int, _ result: TransferResult, _ failure: Failure) {
        runner.endAttempt(job, index, TransferFailure(failure: failure, httpStatus: result.httpStatus, retryAfter: nil,
                                                      bytes: result.bytes, resumedFrom: result.resumedFrom))
    }
}
