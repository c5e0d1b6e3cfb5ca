@testable import DropFetch
import Testing

/// The job table's failed filings: what the loop asks every turn (`filingDue`, `nextFilingDue`)
/// answers from the failed ones alone, and a job leaves that set when it is filed again or forgotten.
@Suite("Job table: failed filings")
struct JobTableTests {
    private func job(_ table: JobTable, _ name: String) -> Job {
        let record = StatusRecord(job: name, state: .done, className: "default", priority: 0, agent: "a1",
                                  submitted: Timestamp.now())
        let job = Job(id: table.makeID(), workName: name, owner: PartOwner(job: name, claim: 1),
                      spec: JobSpec(downloads: []), record: record, arrival: 0, clock: AgentClock())
        table.add(job)
        return job
    }

    @Test("only failed filings that are due come back; committing again or removing takes a job out")
    func failedFilingsOnly() {
        let table = JobTable()
        let jobs = (0..<5).map { job(table, "j\($0).url") }
        #expect(table.filingDue(now: .max).isEmpty && table.nextFilingDue == nil && !table.hasFilingFailures)
        table.committing(jobs[1])
        table.filingFailed(jobs[1], record: jobs[1].record, retryAt: 100)
        table.filingFailed(jobs[3], record: jobs[3].record, retryAt: 300)
        #expect(table.nextFilingDue == 100)
        #expect(table.filingDue(now: 99).isEmpty)
        #expect(table.filingDue(now: 100).map(\.job.workName) == ["j1.url"])
        #expect(Set(table.filingDue(now: 300).map(\.job.workName)) == ["j1.url", "j3.url"])
        #expect(table.filingFailures(of: jobs[1]) == 1)

        table.committing(jobs[1])
        #expect(table.filingDue(now: .max).map(\.job.workName) == ["j3.url"])
        #expect(table.filingFailures(of: jobs[1]) == 1, "a retry keeps the count of failures")
        table.remove(jobs[3])
        #expect(table.filingDue(now: .max).isEmpty && table.nextFilingDue == nil)
    }
}
