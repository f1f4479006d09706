/// SplitMix64 (Steele, Lea, Flood 2014): a small, fast, seedable generator that gives the same
/// sequence for the same seed on every platform, so that every randomized run can be replayed
/// from its seed. The one copy of the project: the tests' randomized runs, scenecore-bench's
/// fixed-seed workload and the seeding of SceneReplay's `SeededRandom` all use it.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 0..<n (n > 0).
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    /// true with `percent` % probability.
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }

    /// One of `items`, nil (drawing nothing) when there are none.
    public mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[below(items.count)] }
}
