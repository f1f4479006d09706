import SceneCore

/// scene-replay's --budget: a byte size as SceneCore's `ByteSize` reads it (`1.5G`, `800M`,
/// `1500000000`), or a share of the working set: `50%`.
public enum BudgetOption: Sendable, Equatable {
    case bytes(UInt64)
    /// Percent of the working set.
    case percent(Double)

    public func resolve(workingSet: UInt64) -> UInt64 {
        switch self {
        case .bytes(let b): b
        case .percent(let p): UInt64((Double(workingSet) * p / 100).rounded())
        }
    }

    public static func parse(_ text: String) -> BudgetOption? {
        if text.hasSuffix("%") {
            guard let p = Double(text.dropLast()), p > 0, p.isFinite else { return nil }
            return .percent(p)
        }
        return ByteSize.parse(text).map(BudgetOption.bytes)
    }
}
