/// Duplicates (DESIGN §10, issue 38) on the run loop: a job under `duplicates: skip` is judged when
/// its first download would start. While a job of this agent fetches one of its URLs it waits, and
/// is judged once that job is filed; a duplicate is filed into done/ with no request, as a job
/// done (its record names the earlier job in `duplicate_of`, `on_done` runs); any other starts.
extension JobRunner {
    /// How long a job whose URL another job fetches waits before it is looked at again (ms).
    static let duplicateWait: Int64 = 200

    func judgeDuplicate(_ entry: Scheduler.Entry, _ job: Job) {
        let keys = Set(job.spec.downloads.flatMap { $0.urls.map { URLKey.key(Redaction.url($0)) } })
        if fetchesAny(of: keys, besides: job) {
            return scheduler.enqueue(entry, due: clock.now() + JobRunner.duplicateWait)
        }
        doneURLs.refresh(root: spool.root)
        switch DuplicateCheck.judge(job.spec, lookup: doneURLs, done: spool.done) {
        case .fetch:
            job.handle(.judgedNotDuplicate)
            start(entry)
        case .duplicate(let earlier, let downloads):
            scheduler.remove(job: job.id)
            // A name taken with the claim is not needed: the earlier job's file is the job's.
            for index in job.indices {
                guard let part = job.part(of: index) else { continue }
                part.discard()
                job.releasePart(of: index)
            }
            var record = job.snapshot()
            record.state = .done
            record.duplicateOf = earlier
            record.attempts = 0
            record.error = nil
            record.folder = nil
            record.retryAt = nil
            record.finished = Timestamp.format(seconds: clock.wallSeconds())
            record.downloads = zip(record.downloads, downloads).map { own, found in
                var entry = own
                entry.state = .done
                entry.file = found.file
                entry.bytes = found.bytes
                entry.sha256 = found.sha256
                entry.httpStatus = nil
                entry.resumedFrom = 0
                entry.error = nil
                entry.connections = nil
                entry.fetched = 0
                return entry
            }
            logger.info("duplicate of an earlier job: filed without a request",
                        metadata: ["job": "\(job.record.job)", "duplicate_of": "\(earlier)"])
            publisher.file(job, record)
        }
    }

    /// Whether another job of this agent, past its own check, fetches one of `keys`.
    private func fetchesAny(of keys: Set<String>, besides job: Job) -> Bool {
        table.allJobs.contains { other in
            other !== job && !other.machine.awaitsDuplicateCheck && !other.isFinished
                && other.spec.downloads.contains { $0.urls.contains { keys.contains(URLKey.key(Redaction.url($0))) } }
        }
    }
}
