/// A proxied target's lookup as a worker request (issue 23: nothing slow on the loop): under
/// `block_private_addresses` a transfer through a proxy never resolves its target itself, so the
/// agent resolves it and checks every address first (`ProxyRoute.checkTarget`). getaddrinfo(3)
/// can wait seconds for a DNS server; on the loop that stalled every transfer.
final class ProxyTargetLookup: WorkerTask {
    let request: Request
    /// What the lookup found, read on the loop once the batch is back.
    private(set) var check: ProxyRoute.TargetCheck = .blocked("the target was not looked up")

    init(host: String) {
        request = Request(host: host)
    }

    func received(_ answer: ProxyRoute.TargetCheck) -> SystemError? {
        check = answer
        return nil
    }

    struct Request: WorkerRequest {
        let host: String

        func perform() -> ProxyRoute.TargetCheck {
            ProxyRoute.checkTarget(host: host)
        }
    }
}
