/// SplitMix64 (Steele, Lea, Flood 2014): the tests' seeded generator, so that a run's random
/// choices — a soak's kills, a table's operations, a file's bytes — can be repeated from its seed.
struct SplitMix64: RandomNumberGenerator {
    /// Where the run began: a failure's message names it, so that the run can be repeated.
    let seed: UInt64
    private var state: UInt64

    init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// A generator on a fresh seed.
    static func seeded() -> SplitMix64 { SplitMix64(seed: UInt64.random(in: .min ... .max)) }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
