import Glibc

/// Gives a complete `.part` its final name: a job's last download together with the job's filing,
/// as one `JobCompletion` request per loop turn; any other through the group commit, data durable →
/// folder checked to be still below the destination root → rename under `on_conflict` (on the
/// finish-steps worker, `PartPublication`) → folder durable, then the job's state saved. No fsync
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
        let isLast = job.downloads.indices.allSatisfy { $0 == index || job.downloads[$0].isFinished }
        if isLast, !table.isCommitting(job) { return complete(part, result, job, index) }
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

    /// The name a complete `.part` is published under: its own, or with `content_disposition: true`
    /// and no `out=`, the server's (sanitised).
    private func target(of part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) -> String {
        if config.contentDisposition, job.downloads[index].spec.out == nil,
           let header = result.contentDisposition, let name = FileName.fromContentDisposition(header) {
            return name
        }
        return part.finalName
    }

    /// The rename of `part` under `on_conflict`, kept until it is durable (a removal may follow it);
    /// nil when the destination cannot be opened, and the attempt has ended.
    private func publication(of part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) -> PartPublication? {
        let root: DirectoryHandle
        do {
            root = try names.destinationRoot(of: job)
        } catch {
            failed(job, index, result, Failure(PartPublication.kind(of: error), error.description))
            return nil
        }
        let publication = PartPublication(part, as: target(of: part, result, job, index), below: root,
                                          onConflict: config.onConflict)
        publications[ObjectIdentifier(part)] = publication
        return publication
    }

    private func rename(_ part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) {
        guard let publication = publication(of: part, result, job, index) else { return }
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

    /// The download is done under `target`; `settle` files the job or saves its state (not when
    /// a `JobCompletion` filed it already).
    private func published(_ part: PartFile, as target: String, _ result: TransferResult, _ job: Job, _ index: Int,
                           settle: Bool = true) {
        let effects = job.apply(.published(file: part.folder.path + "/" + target, result: result), to: index)
        job.releasePart(of: index)
        // The record proves the published file is this job's until the job's own record says so.
        job.notePublished(part.hasRecordFile ? (part.folder, part.recordName, part.record) : nil, for: index)
        guard settle else { return }
        crashPlan?.reach(.published)
        runner.carryOut(effects, job, index)
    }

    // MARK: - The last download of a job: published and filed in one step

    /// Jobs whose last transfer completed in this loop turn, sent together as one `JobCompletion`.
    private var completions: [Completion] = []

    /// A job whose completion is on its way: its part, the publication (for a removal queued
    /// behind it), and what the worker gets.
    private struct Completion {
        let item: JobCompletion.Item
        let part: PartFile
        let publication: PartPublication
        let job: Job
        let result: TransferResult
    }

    /// The job's last download is complete: publishing and filing go to the worker as one request
    /// (sent by `flush` at the end of the loop turn), the job committing meanwhile.
    private func complete(_ part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) {
        guard let publication = publication(of: part, result, job, index) else { return }
        let record = job.finalRecord(completing: index, file: part.folder.path + "/" + publication.request.target,
                                         result: result)
        let outcome: Spool.Outcome = record.state == .done ? .done : .failed
        let source = spool.work + "/" + job.workName
        let spoolFolders: [DirectoryHandle]
        do {
            spoolFolders = try spool.filedFolders(outcome, from: source)
        } catch {
            logger.error("the filing of \(job.workName) may not survive a power cut: \(error)")
            spoolFolders = []
        }
        let published = job.downloads.compactMap(\.publishedRecord).map { (folder: $0.folder, name: $0.name) }
        let filing = SpoolFiling.Request(record, as: outcome, from: source, claim: job.owner.claim, in: spool,
                                         publishedRecords: published + (part.hasRecordFile ? [(part.folder, part.recordName)] : []),
                                         removesState: job.stateFileMayExist, markedPart: (part.file, index, part.folder))
        let item = JobCompletion.Item(data: part.file, publication: publication.request, index: index, filing: filing,
                                      spoolFolders: spoolFolders)
        table.committing(job)
        completions.append(Completion(item: item, part: part, publication: publication, job: job, result: result))
    }

    /// Sends this turn's completions to the finish-steps worker as one batch; each job goes on
    /// in its own step when the batch is back.
    func flush() {
        guard !completions.isEmpty else { return }
        let batch = JobCompletion(completions.map(\.item), durable: config.fsync, crashPlan: crashPlan)
        let pending = completions
        completions = []
        for (position, completion) in pending.enumerated() {
            context.finishSteps.sync([.task(batch)]) { [self] _ in
                if position == 0 {
                    for error in batch.unsynced { logger.error("a finished file or filing may not survive a power cut: \(error)") }
                }
                completed(batch.endings[position], completion)
            }
        }
    }

    /// Goes on from a job's completion: filed and announced; or the attempt ends unpublished; or
    /// the job left meanwhile; or filing failed and is retried.
    private func completed(_ ending: JobCompletion.Ending, _ completion: Completion) {
        let (part, job, result, index) = (completion.part, completion.job, completion.result, completion.item.index)
        publications[ObjectIdentifier(part)] = nil
        let name: String
        let record: StatusRecord
        switch ending {
        case .notPublished(let failure):
            table.stoppedCommitting(job)
            guard isPublishing(part, of: job, index) else { return }
            return failed(job, index, result, failure)
        case .filed(let filedName, let filedRecord, let filed):
            spool.noteFiled(filed)
            published(part, as: filedName, result, job, index, settle: false)
            return filer.filed(job, filedRecord, at: filed.jobPath)
        case .left(let leftName, let leftRecord):
            (name, record) = (leftName, leftRecord)
        case .filingFailed(let failedName, let failedRecord, let error):
            published(part, as: failedName, result, job, index, settle: false)
            return filer.filingFailed(job, failedRecord, error)
        }
        // The job left before it was filed: kept with its published file when it waits in hold/ or
        // the inbox, its data removed when it was cancelled or deleted.
        published(part, as: name, result, job, index, settle: false)
        let place = spool.whereIs(job: job.record.job, workName: job.workName, folder: job.record.folder ?? "")
        if place == .hold || place == .inbox { return filer.leftBeforeFiling(job, record) }
        context.finishSteps.sync([.task(PartRemoval(part, publication: completion.publication))]) { _ in }
        table.remove(job)
        logger.info("job left the work folder before it was filed", metadata: [
            "job": "\(record.job)", "now_in": "\(place?.rawValue ?? "nowhere")", "partial_data": "removed",
        ])
        if place == .failed { filer.filedByCancel(job) }
    }

    /// The attempt ends unpublished; what follows is the runner's (next mirror, retry, failure).
    private func failed(_ job: Job, _ index: Int, _ result: TransferResult, _ failure: Failure) {
        runner.endAttempt(job, index, TransferFailure(failure: failure, httpStatus: result.httpStatus, retryAfter: nil,
                                                      bytes: result.bytes, resumedFrom: result.resumedFrom))
    }
}
