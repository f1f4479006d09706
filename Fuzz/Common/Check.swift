// Shared by every harness: a failed property must end the process the way a crash does, so
// that libFuzzer records the input.

/// Traps (and so makes libFuzzer save the input) when a property does not hold.
func require(_ condition: Bool, _ message: @autoclosure () -> String,
             file: StaticString = #fileID, line: UInt = #line) {
    if !condition {
        fatalError("property failed: \(message())", file: file, line: line)
    }
}

/// The fuzzer's input as an array (libFuzzer may pass a null pointer for the empty input).
func inputBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// A small deterministic generator seeded from the input, for choices (such as where to split
/// a stream) that must be the same each time an input is replayed.
struct InputRandom {
    private var state: UInt64

    init(seed bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        state = hash
    }

    /// splitmix64.
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// Uniform enough in 0..<bound for choosing split points.
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}
