import SceneCore

/// The generator's pseudo-random numbers: xoshiro256** seeded through SplitMix64, so that a seed
/// gives the same trace, byte for byte, on every machine and every Swift version (the standard
/// library's generators promise neither).
public struct SeededRandom: Sendable {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64

    public init(seed: UInt64) {
        var splitMix = SplitMix64(seed: seed)
        s0 = splitMix.next()
        s1 = splitMix.next()
        s2 = splitMix.next()
        s3 = splitMix.next()
    }

    public mutating func next() -> UInt64 {
        let result = rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// Uniform in [0, 1), 53 bits.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Uniform in 0..<n (n > 0), without modulo bias worth mentioning at these sizes: Lemire's
    /// multiply-shift.
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0)
        return Int(next().multipliedFullWidth(by: UInt64(n)).high)
    }

    /// Uniform in the closed range.
    public mutating func between(_ lo: Int, _ hi: Int) -> Int { lo + below(hi - lo + 1) }

    public mutating func chance(_ p: Double) -> Bool { unit() < p }

    /// A standard normal deviate (Box–Muller, one of the pair).
    public mutating func normal() -> Double {
        var u = unit()
        while u <= 0 { u = unit() }
        let v = unit()
        return DeterministicMath.squareRoot(-2 * DeterministicMath.log(u)) * DeterministicMath.cosTwoPi(v)
    }

    /// A log-normal deviate with the given median and shape σ.
    public mutating func logNormal(median: Double, sigma: Double) -> Double {
        median * DeterministicMath.exp(sigma * normal())
    }

    /// An exponential deviate with the given mean.
    public mutating func exponential(mean: Double) -> Double {
        var u = unit()
        while u <= 0 { u = unit() }
        return -mean * DeterministicMath.log(u)
    }

    /// Picks an index by weights (need not sum to 1).
    public mutating func weighted(_ weights: [Double]) -> Int {
        var total = 0.0
        for w in weights { total += w }
        var x = unit() * total
        for (i, w) in weights.enumerated() {
            if x < w { return i }
            x -= w
        }
        return weights.count - 1
    }
}

/// Elementary functions written out with IEEE arithmetic only, so that results (and therefore
/// generated traces) are identical everywhere; the standard library has no `log` or `exp`
/// without Foundation or Glibc, and libm versions may differ in the last bit.
public enum DeterministicMath {
    static let ln2 = 0.693_147_180_559_945_3

    /// Natural logarithm for x > 0: x = m·2^e with m in [1, 2), ln m = 2·atanh((m−1)/(m+1)).
    public static func log(_ x: Double) -> Double {
        precondition(x > 0 && x.isFinite)
        let e = Double(Int(x.exponent))
        let m = x.significand
        let z = (m - 1) / (m + 1)
        let z2 = z * z
        var term = z
        var sum = 0.0
        var k = 1.0
        // |z| ≤ 1/3: 20 odd terms reach well below one ulp.
        for _ in 0..<20 {
            sum += term / k
            term *= z2
            k += 2
        }
        return e * ln2 + 2 * sum
    }

    /// e^x, by x = k·ln 2 + r with |r| ≤ ln 2 / 2 and a Taylor series for e^r.
    public static func exp(_ x: Double) -> Double {
        if x > 700 { return .infinity }
        if x < -700 { return 0 }
        let k = (x / ln2).rounded()
        let r = x - k * ln2
        var term = 1.0
        var sum = 1.0
        for i in 1...18 {
            term *= r / Double(i)
            sum += term
        }
        return sum * pow2(Int(k))
    }

    /// x^y for x > 0.
    public static func pow(_ x: Double, _ y: Double) -> Double { exp(y * log(x)) }

    static func pow2(_ k: Int) -> Double { Double(sign: .plus, exponent: k, significand: 1) }

    public static func squareRoot(_ x: Double) -> Double { x.squareRoot() }

    /// cos(2πv) for v in [0, 1), by reduction to [0, π/4] and Taylor series.
    static func cosTwoPi(_ v: Double) -> Double {
        // Reduce to an angle a in [0, π] with the sign of the cosine.
        let twoPi = 6.283_185_307_179_586
        var a = v * twoPi
        if a > .pi { a = twoPi - a }
        // cos on [0, π]: use cos(a) = −cos(π − a) to stay within [0, π/2].
        var sign = 1.0
        if a > .pi / 2 {
            a = .pi - a
            sign = -1
        }
        let a2 = a * a
        var term = 1.0
        var sum = 1.0
        for i in stride(from: 2, through: 24, by: 2) {
            term *= -a2 / Double((i - 1) * i)
            sum += term
        }
        return sign * sum
    }
}
