import SceneCore
import Varlink

/// Writes a trace in the JSON-lines format `TraceParser` reads, one compact object per line with
/// a fixed key order, so that the same trace always gives the same bytes.
public enum TraceWriter {
    public static func write(_ trace: Trace) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(trace.events.count * 48)
        for event in trace.events {
            out.append(contentsOf: line(event))
            out.append(UInt8(ascii: "\n"))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One line: `t` and `ev`, then the members of its kind.
    public static func line(_ event: TraceEvent) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 96)
        w.beginObject()
        w.key("t")
        w.int(event.time)
        w.key("ev")
        switch event.kind {
        case .meta(let scenario, let seed): meta(scenario: scenario, seed: seed, &w)
        case .open(let scene): open(scene, &w)
        case .activate(let name): sceneLine("activate", name, &w)
        case .deactivate(let name): sceneLine("deactivate", name, &w)
        case .background(let name): sceneLine("background", name, &w)
        case .suspend(let name): sceneLine("suspend", name, &w)
        case .close(let name): sceneLine("close", name, &w)
        case .disconnect(let name): sceneLine("disconnect", name, &w)
        case .mem(let name, let bytes): mem(scene: name, bytes: bytes, &w)
        case .appMem(let app, let bytes): appMem(app: app, bytes: bytes, &w)
        case .protect(let name, let on): protect(scene: name, on: on, &w)
        case .budget(let budget): self.budget(budget, &w)
        case .pressure(let level): pressure(level?.name ?? "auto", durationMs: nil, &w)
        case .timedPressure(let level, let ms): pressure(level.name, durationMs: ms, &w)
        case .ackProfile(let profile): ackProfile(profile, &w)
        case .settings(let s): settings(s, &w)
        case .launch(let app): appLine("launch", app, &w)
        case .terminate(let app): appLine("terminate", app, &w)
        case .decide: w.string("decide")
        }
        w.endObject()
        return w.bytes
    }

    static func meta(scenario: String?, seed: UInt64?, _ w: inout JSONWriter) {
        w.string("meta")
        if let scenario {
            w.key("scenario")
            w.string(scenario)
        }
        if let seed {
            w.key("seed")
            w.uint(seed)
        }
    }

    static func open(_ s: TraceScene, _ w: inout JSONWriter) {
        sceneLine("open", s.name, &w)
        if let app = s.app {
            w.key("app")
            w.string(app)
        }
        w.key("mem")
        w.uint(s.bytes)
        w.key("restore_ms")
        w.uint(UInt64(s.restoreMs))
        if s.stateBytes > 0 {
            w.key("state_bytes")
            w.uint(s.stateBytes)
        }
        if !s.flags.isEmpty {
            w.key("flags")
            w.beginArray()
            for flag in s.flags { w.string(flag) }
            w.endArray()
        }
    }

    /// A line that names a scene and nothing else (the others add their members after it).
    static func sceneLine(_ ev: String, _ scene: String, _ w: inout JSONWriter) {
        w.string(ev)
        w.key("scene")
        w.string(scene)
    }

    /// A line that names an app and nothing else.
    static func appLine(_ ev: String, _ app: String, _ w: inout JSONWriter) {
        w.string(ev)
        w.key("app")
        w.string(app)
    }

    static func mem(scene: String, bytes: UInt64, _ w: inout JSONWriter) {
        sceneLine("mem", scene, &w)
        w.key("mem")
        w.uint(bytes)
    }

    static func appMem(app: String, bytes: UInt64, _ w: inout JSONWriter) {
        appLine("app_mem", app, &w)
        w.key("mem")
        w.uint(bytes)
    }

    static func protect(scene: String, on: Bool, _ w: inout JSONWriter) {
        sceneLine("protect", scene, &w)
        w.key("on")
        w.bool(on)
    }

    static func budget(_ budget: TraceBudget, _ w: inout JSONWriter) {
        w.string("budget")
        switch budget {
        case .bytes(let b):
            w.key("bytes")
            w.uint(b)
        case .scale(let k):
            w.key("scale")
            w.double(k)
        case .unlimited:
            w.key("bytes")
            w.null()
        }
    }

    /// An explicit level until the next pressure line, or an override for `durationMs`.
    static func pressure(_ level: String, durationMs: Int64?, _ w: inout JSONWriter) {
        w.string("pressure")
        w.key("level")
        w.string(level)
        if let durationMs {
            w.key("for_ms")
            w.int(durationMs)
        }
    }

    static func ackProfile(_ p: AckProfile, _ w: inout JSONWriter) {
        sceneLine("ack_profile", p.scene, &w)
        w.key("latency_ms")
        if let ms = p.latencyMs { w.int(ms) } else { w.null() }
        w.key("defer")
        w.bool(p.defers)
    }
}
