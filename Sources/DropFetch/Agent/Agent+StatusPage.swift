/// Where the event loop writes the `status_page` (StatusPageFile): checked each turn against the
/// gauges, written on the finishing worker, and once more, inline, when the run ends.
extension Agent {
    /// What the page's gauges say now: counts, the queue's heap operations and the last state refresh.
    var statusPageGauges: StatusPageFile.Gauges {
        StatusPageFile.Gauges(running: context.table.runningCount, ready: runner.scheduler.readyCount,
                              waiting: runner.scheduler.waitingCount, inbox: intake.inbox.count, jobs: context.table.count,
                              queueOperations: runner.scheduler.heapOperations, stateRefresh: runner.lastStateRefresh)
    }

    /// When the page is next due (monotonic ms), for the poll timeout; nil while nothing changed.
    var statusPageDeadline: Int64? {
        context.statusPage?.nextWrite(statusPageGauges)
    }

    /// Writes the page on a worker if something changed and a second has passed; follows a config
    /// reload that names another page (or none).
    func writeStatusPageIfDue(now: Int64) {
        if context.config.statusPage != context.statusPage?.configured {
            context.statusPage = context.config.statusPage.map {
                StatusPageFile(configured: $0, agent: context.agentID, logger: context.logger)
            }
        }
        guard let page = context.statusPage else { return }
        page.writeIfDue(now: now, wallSeconds: clock.wallSeconds(), statusPageGauges, received: bandwidth.receivedBytes,
                        config: context.config, on: context.finishSteps)
    }

    /// The last page of a run, written here: this agent shown as stopped.
    func writeFinalStatusPage() {
        context.statusPage?.write(now: clock.now(), wallSeconds: clock.wallSeconds(), statusPageGauges, config: context.config,
                                  stopping: true, on: nil)
    }
}
