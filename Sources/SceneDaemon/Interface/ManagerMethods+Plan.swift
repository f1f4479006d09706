import SceneCore
import Varlink

/// GetReclaimPlan: "why this victim?" — the controller's ranking and next plan, without acting.
extension MethodDispatcher {
    func getReclaimPlan(_ c: MethodCall) throws(VarlinkError) {
        let level = try c.p.enumValue("level", PressureLevel.init(name:)) ?? reclaim.level
        let limit = Int(min(try c.p.count("limit") ?? 20, 10_000))
        let preview = reclaim.policy.preview(engine: host.engine, level: level, usage: host.engine.residentBytes,
                                             now: host.clock.now(), limit: limit)
        reply(c) { w in
            w.key("plan")
            w.beginObject()
            w.field("level", preview.level.name)
            w.field("currentLevel", reclaim.level.name)
            w.field("usage", preview.usage)
            w.field("budget", reclaim.budget)
            w.field("lowWatermark", UInt64(Double(reclaim.budget) * reclaim.watermarks.low))
            w.key("candidates")
            w.beginArray()
            for candidate in preview.candidates { w.reclaimCandidate(candidate) }
            w.endArray()
            w.field("moreCandidates", UInt64(preview.moreCandidates))
            w.field("withheld", UInt64(preview.withheld))
            w.field("protected", UInt64(preview.protected))
            w.key("steps")
            w.beginArray()
            for step in preview.plan.steps { w.reclaimStep(step) }
            w.endArray()
            w.field("usageAfter", preview.usageAfter)
            w.field("unrelievable", preview.plan.unrelievable)
            w.endObject()
        }
    }
}

extension JSONWriter {
    mutating func reclaimCandidate(_ c: ReclaimPreview.Candidate) {
        beginObject()
        field("rank", UInt64(c.rank))
        if let s = c.session { field("session", s) }
        field("app", c.app)
        field("tier", UInt64(c.tier))
        key("score"); double(c.score)
        key("uses"); double(c.uses)
        key("restoreCostMs"); double(c.restoreCostMs)
        key("meanRestoreCostMs"); double(c.meanRestoreCostMs)
        field("bytes", c.bytes)
        field("lastActiveAt", c.lastActiveAt)
        field("backgroundFor", Int64(c.backgroundFor.microseconds))
        field("reason", c.reason)
        endObject()
    }

    mutating func reclaimStep(_ step: ReclaimStep) {
        beginObject()
        switch step.action {
        case .memoryWarning(let apps):
            field("action", static: "memoryWarning")
            key("apps"); beginArray(); for a in apps { string(a.rawValue) }; endArray()
        case .suspend(let app):
            field("action", static: "suspend")
            key("apps"); beginArray(); string(app.rawValue); endArray()
        case .disconnect(let id):
            field("action", static: "disconnect")
            field("session", id)
        case .terminate(let app):
            field("action", static: "terminate")
            key("apps"); beginArray(); string(app.rawValue); endArray()
        case .discard(let id):
            field("action", static: "discard")
            field("session", id)
        }
        field("usageAfter", step.note.usageAfter)
        field("reason", step.note.reason)
        if let score = step.note.score { key("score"); double(score) }
        endObject()
    }
}

/// GetPressureHistory: a real episode to chart (`scenectl pressure chart`).
extension MethodDispatcher {
    func getPressureHistory(_ c: MethodCall) throws(VarlinkError) {
        let since = try c.p.count("since") ?? 0
        let history = reclaim.history
        let (samples, actions) = history.since(since)
        reply(c) { w in
            w.key("samples")
            w.beginArray()
            for s in samples {
                w.beginObject()
                w.field("time", s.time)
                w.field("seq", s.seq)
                w.field("usage", s.usage)
                w.field("budget", s.budget)
                w.field("level", s.level.name)
                w.endObject()
            }
            w.endArray()
            w.key("actions")
            w.beginArray()
            for a in actions {
                w.beginObject()
                w.field("time", a.time)
                w.field("seq", a.seq)
                w.field("action", a.kind.rawValue)
                w.field("target", a.target)
                w.field("usage", a.usage)
                w.endObject()
            }
            w.endArray()
            w.key("lowWatermark")
            w.double(reclaim.watermarks.low)
            w.key("highWatermark")
            w.double(reclaim.watermarks.high)
            w.field("droppedSamples", UInt64(history.droppedSamples))
            w.field("droppedActions", UInt64(history.droppedActions))
        }
    }
}
