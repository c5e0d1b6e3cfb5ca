extension Config {
    /// Settings that load but cannot do what they ask (a split wider than per_host allows): `check` warns, exit 0.
    public var warnings: [String] {
        var found: [String] = []
        let hostCap = min(concurrency.perHost, concurrency.total)
        let capName = concurrency.perHost <= concurrency.total
            ? "concurrency.per_host \(concurrency.perHost)" : "concurrency.total \(concurrency.total)"
        func checkSplit(_ split: Split, key: String, classCap: Int?, className: String?) {
            if split.connections > hostCap {
                found.append("\(key).connections \(split.connections) exceeds \(capName): a split download runs "
                    + "at most \(hostCap) connections to one server (raise concurrency.per_host to allow more)")
            } else if let classCap, let className, split.connections > classCap {
                found.append("\(key).connections \(split.connections) exceeds class \(className)'s max_active "
                    + "\(classCap): its split downloads run at most \(classCap) connections")
            }
        }
        checkSplit(split, key: "split", classCap: nil, className: nil)
        for jobClass in classes {
            let key = jobClass.split == nil ? "split" : "classes[\(jobClass.name)].split"
            if jobClass.split == nil, jobClass.maxActive == nil { continue }
            if jobClass.split == nil, split.connections > hostCap { continue }  // said for the top level already
            checkSplit(jobClass.split ?? split, key: key, classCap: jobClass.maxActive, className: jobClass.name)
        }
        return found
    }
}
