import Glibc

/// The one finish path (issue 34): a complete `.part` given its final name, a job filed, or both
/// at once when the job's last download completes, each as one `JobFinish` item sent with the
/// others held while the finish batch before was away (`FinishBatch`): data durable → folder
/// checked to be still below the destination root → rename under `on_conflict` → folder durable →
/// status durable → filed beside the job file → spool folders durable (docs/spool.md). No fsync
/// and no rename runs on the loop thread.
final class JobPublisher: AgentPart {
    let context: AgentContext
    unowned var runner: JobRunner!
    unowned var filer: JobFiler!
    unowned var names: OutputNames!

    init(context: AgentContext) {
        self.context = context
    }

    /// The transfer of download `index` is complete: published, and the job filed with it when
    /// it is the last download still open.
    func publish(_ part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) {
        job.apply(.publishing, to: index)
        let token = job.token(index)
        guard let publication = publication(of: part, result, job, index) else { return }
        let isLast = job.indices.allSatisfy { $0 == index || job.isFinished($0) }
        var filing: (request: SpoolFiling, folders: [DirectoryHandle])?
        if isLast, !table.isCommitting(job) {
            let record = job.finalRecord(completing: index, file: part.publishedPath(as: publication.request.target),
                                         result: result)
            // Short of descriptors for the spool folders' handles: the job is filed once its part is published.
            if let planned = try? plan(job, record, markedPart: (part.file, index, part.folder),
                                       publishedRecord: part.hasRecordFile ? (part.folder, part.recordName) : nil) {
                filing = planned
                table.committing(job)
            }
        }
        let item = JobFinish.Item(part: JobFinish.Part(data: part.file, publication: publication.request, index: index),
                                  filing: filing?.request, spoolFolders: filing?.folders ?? [])
        // A constant captured, not the `var` (which the closure would box on the heap).
        let files = filing != nil
        context.finishes.add(item) { [self] ending in
            finished(ending, part, publication, result, job, token, filing: files)
        }
    }

    /// Files a job that never queued (invalid, unsupported) in failed/.
    func fileImmediately(_ workName: String, _ base: StatusRecord, _ failure: Failure) {
        let record = Job.refusedRecord(base, failure, wall: clock.wallSeconds())
        let job = Job(id: table.makeID(), workName: workName, owner: PartOwner(job: record.job, claim: 0),
                      spec: JobSpec(downloads: []), record: record, arrival: 0, clock: clock)
        table.add(job)
        file(job, record)
    }

    /// Files a job whose downloads are all over, in done/ or failed/.
    func fileJob(_ job: Job) {
        file(job, job.finalRecord())
    }

    /// Files a job whose downloads are all over (or that never queued) under `record`: its
    /// status durable, put in place in done/ or failed/ with the job file beside it, both
    /// folders durable, announced. When a step fails (ENOSPC, EIO) the job stays claimed and
    /// filing is retried with backoff, never forgotten.
    func file(_ job: Job, _ record: StatusRecord) {
        guard !table.isCommitting(job) else { return }
        table.committing(job)
        let filing: (request: SpoolFiling, folders: [DirectoryHandle])
        do {
            filing = try plan(job, record, markedPart: nil, publishedRecord: nil)
        } catch {
            return filer.filingFailed(job, record, error)
        }
        context.finishes.add(JobFinish.Item(part: nil, filing: filing.request, spoolFolders: filing.folders)) { [self] ending in
            switch ending {
            case .filed(_, let filedRecord, let filed):
                spool.noteFiled(filed)
                filer.filed(job, filedRecord, at: filed.jobPath)
            case .left(_, let leftRecord):
                filer.leftBeforeFiling(job, leftRecord)
            case .filingFailed(_, let failedRecord, let error):
                filer.filingFailed(job, failedRecord, error)
            case .notPublished, .published:
                // Asked for no part: cannot happen; the job is filed again later.
                filer.filingFailed(job, record, SystemError(code: EINVAL, operation: "file"))
            }
        }
    }

    /// The filing of `job` under `record` and the spool folders to sync after it; throws when the
    /// agent had no descriptor for a folder's handle (EMFILE), which only waiting cures.
    private func plan(_ job: Job, _ record: StatusRecord, markedPart: (file: FileDescriptor, download: Int, folder: DirectoryHandle)?,
                      publishedRecord: (folder: DirectoryHandle, name: String)?) throws(SystemError)
        -> (request: SpoolFiling, folders: [DirectoryHandle]) {
        let outcome: Spool.Outcome = record.state == .done ? .done : .failed
        let source = FileSystem.join(spool.work, job.workName)
        var folders: [DirectoryHandle] = []
        // Only synced (JobFinish) with `fsync: true`, which a reload cannot change.
        if config.fsync {
            do {
                folders = try spool.filedFolders(outcome, from: source)
            } catch {
                if DescriptorLimit.isShortage(error) { throw error }
                // The moves are still made; a folder that cannot be synced is reported, not undone.
                logger.error("the filing of \(job.workName) may not survive a power cut: \(error)")
            }
        }
        var published = job.publishedFiles.map { (folder: $0.folder, name: $0.name) }
        if let publishedRecord { published.append(publishedRecord) }
        // Each download's URL as fetched, for the done index (a duplicate fetched none).
        var fetched: [String] = []
        if outcome == .done, record.duplicateOf == nil {
            fetched = job.indices.compactMap { index in
                guard index < record.downloads.count, record.downloads[index].state == .done else { return nil }
                let urls = job.spec.downloads[index].urls
                return urls[min(job.machine.downloads[index].mirror, urls.count - 1)]
            }
        }
        let request = SpoolFiling(record, as: outcome, from: source, named: job.workName, claim: job.owner.claim, in: spool,
                                  publishedRecords: published, removesState: job.stateFileMayExist,
                                  markedPart: markedPart, fetchedURLs: fetched, filedAt: clock.wallNanoseconds())
        return (request, folders)
    }

    /// The name a complete `.part` is published under: its own, or with `content_disposition: true`
    /// and no `out=`, the server's (sanitised).
    private func target(of part: PartFile, _ result: TransferResult, _ job: Job, _ index: Int) -> String {
        if config.contentDisposition, job.spec.downloads[index].out == nil,
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

    /// Publications on their way, by part, until the published name is durable.
    private var publications: [ObjectIdentifier: PartPublication] = [:]

    /// Removes the data of a download whose job left while it was being published and is not
    /// kept (cancelled, deleted): after the rename on its way, under the published name too.
    func discard(_ part: PartFile) {
        let publication = publications.removeValue(forKey: ObjectIdentifier(part))
        context.finishes.remove(PartRemoval(part, publication: publication), on: context.finishSteps)
    }

    /// The download is done under `target`; `settle` files the job or saves its state (not when
    /// its `JobFinish` filed it already).
    private func published(_ part: PartFile, as target: String, _ result: TransferResult, _ job: Job, _ index: Int,
                           settle: Bool = true) {
        let effects = job.apply(.published(file: part.publishedPath(as: target), result: result), to: index)
        job.releasePart(of: index)
        // The record proves the published file is this job's until the job's own record says so.
        job.notePublished(part.hasRecordFile ? (part.folder, part.recordName, part.record) : nil, for: index)
        guard settle else { return }
        runner.carryOut(effects, job, index)
    }

    /// Goes on from a part's end: published (and the job filed, when this end was to file it);
    /// or the attempt ends unpublished; or the job left meanwhile; or filing failed and is retried.
    private func finished(_ ending: JobFinish.Ending, _ part: PartFile, _ publication: PartPublication,
                          _ result: TransferResult, _ job: Job, _ token: Job.Token, filing: Bool) {
        publications[ObjectIdentifier(part)] = nil
        let index = token.download
        // Whether the download still waits to publish `part` (it was not held, cancelled or removed meanwhile).
        let stillPublishing = table.current(token) != nil
        let name: String
        let record: StatusRecord
        switch ending {
        case .notPublished(let failure):
            if filing { table.stoppedCommitting(job) }
            guard stillPublishing else { return }
            return failed(job, index, result, failure)
        case .published(let publishedName):
            // Held meanwhile: the file keeps its record, which proves it is the job's (`discard` for a cancel).
            guard stillPublishing else { return }
            return published(part, as: publishedName, result, job, index)
        case .filed(let filedName, let filedRecord, let filed):
            spool.noteFiled(filed)
            published(part, as: filedName ?? part.finalName, result, job, index, settle: false)
            return filer.filed(job, filedRecord, at: filed.jobPath)
        case .left(let leftName, let leftRecord):
            (name, record) = (leftName ?? part.finalName, leftRecord)
        case .filingFailed(let failedName, let failedRecord, let error):
            published(part, as: failedName ?? part.finalName, result, job, index, settle: false)
            return filer.filingFailed(job, failedRecord, error)
        }
        // The job left before it was filed: kept with its published file when it waits in hold/ or
        // the inbox, its data removed when it was cancelled or deleted.
        published(part, as: name, result, job, index, settle: false)
        let place = spool.whereIs(job: job.record.job, workName: job.workName, folder: job.record.folder ?? "")
        if place == .hold || place == .inbox { return filer.leftBeforeFiling(job, record) }
        context.finishSteps.sync([.task(PartRemoval(part, publication: publication))]) { _ in }
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
