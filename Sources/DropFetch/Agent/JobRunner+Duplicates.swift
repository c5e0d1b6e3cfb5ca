/// Duplicates (DESIGN §10, issue 38) on the run loop: a job under `duplicates: skip` is judged when
/// its first download would start. While a job fetches one of its URLs — one of this agent's, or
/// another agent's that said so in its done index and is still in its work folder — it waits, and
/// is judged once that job is filed; a duplicate is filed into done/ with no request, as a job
/// done (its record names the earlier job in `duplicate_of`, `on_done` runs); any other starts,
/// and says in the index that it fetches its URLs.
extension JobRunner {
    /// How long a job whose URL another job fetches waits before it is looked at again (ms).
    static let duplicateWait: Int64 = 200

    func judgeDuplicate(_ entry: Scheduler.Entry, _ job: Job) {
        let keys = job.urlKeys
        doneURLs.refresh(root: spool.root)
        if fetchesAny(of: keys, besides: job) {
            return scheduler.enqueue(entry, due: clock.now() + JobRunner.duplicateWait)
        }
        let destinations = [context.destinationRoot] + config.classes.compactMap { $0.destination.map(Agent.absolute) }
        switch DuplicateCheck.judge(job.spec, lookup: doneURLs, done: spool.done, destinations: destinations) {
        case .fetch:
            job.handle(.judgedNotDuplicate)
            spool.doneIndex.appendFetching(keys: keys.sorted(), workName: job.workName, claim: job.owner.claim)
            start(entry)
        case .duplicate(let earlier, let downloads):
            scheduler.remove(job: job.id)
            // A name taken with the claim is not needed: the earlier job's file is the job's.
            for index in job.indices {
                job.dropEarlierName(of: index, removing: true)
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

    /// Whether another job fetches one of `keys` now: one of this agent's (`Job.isFetching`: not
    /// one that waits for a retry, which could outlast `run --once`), or one another agent's index
    /// says fetches it and whose job file is still in that agent's work folder. Its inode is not
    /// compared: two mounts of one GlusterFS volume number one file differently, and a later job
    /// under the same name only makes this one wait for it.
    private func fetchesAny(of keys: Set<String>, besides job: Job) -> Bool {
        let here = table.allJobs.contains { other in
            other !== job && other.isFetching && !other.urlKeys.isDisjoint(with: keys)
        }
        if here { return true }
        return keys.contains { key in
            doneURLs.fetching(key, besides: agentID, workRoot: spool.workRoot).contains(where: FileSystem.exists)
        }
    }
}
