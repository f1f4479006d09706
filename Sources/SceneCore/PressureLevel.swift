/// How short memory is. Sources (simulated budget, operator override, PSI) each report one; the
/// daemon acts on the highest.
public enum PressureLevel: UInt8, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    case normal
    case warning
    case critical

    public var name: String {
        switch self {
        case .normal: "normal"
        case .warning: "warning"
        case .critical: "critical"
        }
    }
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }
    public var description: String { name }
    public static func < (a: PressureLevel, b: PressureLevel) -> Bool { a.rawValue < b.rawValue }
}

/// Watermarks as fractions of the memory budget. Rising: warning at `high`, critical at
/// `critical`. Falling (hysteresis, after the hold time): critical ends below `high`, warning
/// ends at or below `low`; reclaim aims for `low`.
public struct Watermarks: Sendable, Equatable {
    public var low: Double
    public var high: Double
    public var critical: Double

    public init(low: Double = 0.80, high: Double = 0.90, critical: Double = 0.97) {
        self.low = low
        self.high = high
        self.critical = critical
    }

    public var isValid: Bool { 0 < low && low < high && high <= critical && critical <= 1.5 }
}

/// The simulated pressure source: usage against a budget, with hysteresis and a hold time so
/// that usage hovering at a watermark does not make the level flap.
public struct PressureGauge: Sendable, Equatable {
    public var watermarks: Watermarks
    /// A level drops only after usage stayed below its exit watermark this long.
    public var hold: TimeSpan
    public private(set) var level: PressureLevel = .normal
    /// Since when usage has been below the current level's exit watermark.
    public private(set) var belowSince: Timestamp?

    public init(watermarks: Watermarks = Watermarks(), hold: TimeSpan = .seconds(4)) {
        self.watermarks = watermarks
        self.hold = hold
    }

    @discardableResult
    public mutating func update(usage: UInt64, budget: UInt64, now: Timestamp) -> PressureLevel {
        guard budget > 0 else {
            level = .normal
            belowSince = nil
            return level
        }
        let ratio = Double(usage) / Double(budget)
        let rising: PressureLevel = ratio >= watermarks.critical ? .critical : ratio >= watermarks.high ? .warning : .normal
        if rising > level {
            level = rising
            belowSince = nil
            return level
        }
        let below: Bool
        switch level {
        case .normal: below = false
        case .warning: below = ratio <= watermarks.low
        case .critical: below = ratio < watermarks.high
        }
        guard below else {
            belowSince = nil
            return level
        }
        let since = belowSince ?? now
        belowSince = since
        if now - since >= hold {
            level = level == .critical && ratio > watermarks.low ? .warning : .normal
            // A drop from critical to warning starts its own hold if usage is already low.
            belowSince = level == .warning && ratio <= watermarks.low ? now : nil
        }
        return level
    }

    /// When `update` may next lower the level if nothing changes (for a timer).
    public var nextDrop: Timestamp? { belowSince.map { $0 + hold } }
}
