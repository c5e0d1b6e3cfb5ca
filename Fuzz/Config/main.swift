// libFuzzer target for the YAML config loader (docs/config.md); compiled together with Sources/DropFetch by Fuzz/run.sh.

/// Stops the run with `message`: libFuzzer records the input as a crash.
func violated(_ message: String) -> Never {
    fatalError("invariant violated: \(message)")
}

/// Checks the ranges `ConfigLoader.retry(_:inheriting:)` enforces.
func checkRetry(_ retry: Config.Retry, _ path: String) {
    if retry.attempts < 1 { violated("\(path).attempts \(retry.attempts) < 1") }
    if retry.initialDelay > retry.maxDelay { violated("\(path): initial_delay > max_delay") }
    if retry.initialDelay < .zero { violated("\(path).initial_delay is negative") }
    if let status = retry.onHTTP.first(where: { !(400...599).contains($0) }) {
        violated("\(path).on_http holds \(status)")
    }
    if Set(retry.onHTTP).count != retry.onHTTP.count { violated("\(path).on_http has duplicates") }
}

/// Checks a loaded config against the documented key ranges.
func checkConfig(_ config: Config) {
    if config.concurrency.total < 1 || config.concurrency.perHost < 1 { violated("concurrency below 1") }
    checkRetry(config.retry, "retry")
    let limits = config.limits
    if limits.maxFileSize < 1 || limits.maxJobFileSize < 1 { violated("a size limit below 1") }
    if limits.connectTimeout < .milliseconds(1) { violated("connect_timeout below 1ms") }
    if limits.lowSpeed.duration < .seconds(1) { violated("low_speed.for below 1s") }
    if limits.lowSpeed.bytesPerSecond < 0 || limits.rateLimit < 0 { violated("a negative rate") }
    if config.onceWait < .zero || config.scanInterval < .zero { violated("a negative duration") }
    let durations = [config.onceWait, config.scanInterval, config.retry.initialDelay, config.retry.maxDelay,
                     limits.connectTimeout, limits.lowSpeed.duration, limits.timeout]
    if durations.contains(where: { $0 > Units.maxDuration }) { violated("a duration beyond 100 years") }
    let sizes = [limits.maxFileSize, limits.maxJobFileSize, limits.lowSpeed.bytesPerSecond, limits.rateLimit,
                 limits.minFreeSpace] + config.classes.compactMap(\.rateLimit)
    if sizes.contains(where: { $0 > Units.maxSize }) { violated("a size beyond 2^62") }
    if config.protocols.isEmpty { violated("no protocols") }
    let known: Set = ["http", "https", "ftp", "ftps", "sftp"]
    if let bad = config.protocols.first(where: { !known.contains($0) }) { violated("protocol \(bad.debugDescription)") }
    if let id = config.agentID, id.contains("/") || id.hasPrefix(".") { violated("agent_id \(id.debugDescription)") }
    for argv in [config.hooks.onDone, config.hooks.onFailed, config.hooks.onIdle] {
        if let argv, argv.isEmpty || argv.contains(where: { $0.utf8.contains(0) }) {
            violated("hook argv \(argv)")
        }
    }
    for jobClass in config.classes {
        if let retry = jobClass.retry { checkRetry(retry, "classes[\(jobClass.name)].retry") }
        if let rate = jobClass.rateLimit, rate < 0 { violated("class rate_limit \(rate)") }
    }
    if Set(config.classes.map(\.name)).count != config.classes.count { violated("duplicate class names") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do throws(ConfigError) {
        checkConfig(try ConfigLoader.parse(text, file: "fuzz.yaml"))
    } catch {
        if error.file != "fuzz.yaml" { violated("error names file \(error.file.debugDescription)") }
        if let line = error.line, line < 1 { violated("error line \(line)") }
        if let column = error.column, column < 1 { violated("error column \(column)") }
        _ = error.description
    }
    return 0
}
