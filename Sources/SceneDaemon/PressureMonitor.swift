import SceneCore
import SystemdKit

/// The pressure level the daemon acts on: the highest level any enabled source reports.
/// Sources: the simulated budget (usage by the engine's accounting, with hysteresis), an
/// operator's override (optionally for a while), and PSI.
final class PressureMonitor {
    struct Override: Equatable {
        var level: PressureLevel
        /// Engine time at which it lapses; nil: until cleared.
        var until: Timestamp?
    }

    var simulatedEnabled: Bool
    private(set) var gauge: PressureGauge
    var budget: UInt64
    private(set) var usage: UInt64 = 0
    var override: Override?
    var psi: PSISource?

    init(budget: UInt64, watermarks: Watermarks, hold: TimeSpan, simulated: Bool) {
        self.budget = budget
        gauge = PressureGauge(watermarks: watermarks, hold: hold)
        simulatedEnabled = simulated
    }

    func reconfigure(budget: UInt64, watermarks: Watermarks, hold: TimeSpan, simulated: Bool) {
        self.budget = budget
        gauge.watermarks = watermarks
        gauge.hold = hold
        simulatedEnabled = simulated
    }

    /// Feeds the current usage; lapses an expired override.
    func update(usage: UInt64, now: Timestamp) {
        self.usage = usage
        if simulatedEnabled { gauge.update(usage: usage, budget: budget, now: now) }
        if let o = override, let until = o.until, now >= until { override = nil }
    }

    var simulatedLevel: PressureLevel { simulatedEnabled ? gauge.level : .normal }
    var psiLevel: PressureLevel { psi?.level ?? .normal }
    var overrideLevel: PressureLevel { override?.level ?? .normal }

    var level: PressureLevel { max(simulatedLevel, psiLevel, overrideLevel) }

    /// The level comes from something other than the footprint accounting.
    var isExternal: Bool { max(psiLevel, overrideLevel) > simulatedLevel }

    /// When the level may change by itself (hold time over, override lapsing).
    var nextChange: Timestamp? {
        var t: Timestamp?
        if simulatedEnabled, let drop = gauge.nextDrop { t = drop }
        if let until = override?.until { t = t.map { min($0, until) } ?? until }
        return t
    }

    struct SourceReport {
        var name: String
        var level: PressureLevel
        var detail: String
    }

    func sources(now: Timestamp) -> [SourceReport] {
        var out: [SourceReport] = []
        if simulatedEnabled {
            out.append(SourceReport(name: "simulated", level: gauge.level,
                                    detail: "\(Format.bytes(usage)) of \(Format.bytes(budget))"))
        }
        if let psi {
            out.append(SourceReport(name: "psi", level: psi.level, detail: "\(psi.settings.path): \(psi.mode.description)"))
        }
        if let o = override {
            out.append(SourceReport(name: "override", level: o.level,
                                    detail: o.until.map { "forced; lapses in \(($0 - now).approximate)" } ?? "forced until cleared"))
        }
        return out
    }
}
