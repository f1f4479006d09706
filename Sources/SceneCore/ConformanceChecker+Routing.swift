// MARK: - Routing's bookkeeping

extension ConformanceChecker {
    /// Stored Opens wait only for an app that is not running (its launch delivers them all),
    /// each listed once by its app in id order, within MaxPendingOpens; conditions are held only
    /// for connected scenes, and never UIKit's defaults.
    static func checkRouting(of engine: LifecycleEngine, _ found: inout EngineFindings) {
        var listed = 0
        for (id, a) in engine.apps where !a.pendingOpens.isEmpty {
            listed += a.pendingOpens.count
            if a.process != .notRunning { found.flag(id, nil, "\(a.process) with \(a.pendingOpens.count) stored opens") }
            if a.pendingOpens != a.pendingOpens.sorted() { found.flag(id, nil, "stored opens \(a.pendingOpens) are not in id order") }
            if a.pendingOpens.count > engine.configuration.maxPendingOpens {
                found.flag(id, nil, "holds more opens than MaxPendingOpens")
            }
            for o in a.pendingOpens {
                if engine.pendingOpens[o]?.request.app != id { found.flag(id, nil, "lists open \(o), which the engine does not hold for it") }
                if o.number == 0 || o.number >= engine.nextOpenNumber { found.flag(id, nil, "open \(o) beyond the high-water mark") }
            }
        }
        if listed != engine.pendingOpens.count {
            found.flag(nil, nil, "the apps list \(listed) stored opens, the engine holds \(engine.pendingOpens.count)")
        }
        for (sid, c) in engine.activationConditions {
            let s = engine.sessions[sid]
            if s?.condition != .live { found.flag(s?.app, sid, "activation conditions held for a scene that is not connected") }
            if c == .default { found.flag(s?.app, sid, "UIKit's default activation conditions held as if set") }
        }
    }
}
