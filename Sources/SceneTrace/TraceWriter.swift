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

    public static func line(_ event: TraceEvent) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 96)
        w.beginObject()
        w.key("t")
        w.int(event.time)
        w.key("ev")
        func scene(_ name: String) {
            w.key("scene")
            w.string(name)
        }
        switch event.kind {
        case .meta(let scenario, let seed):
            w.string("meta")
            if let scenario {
                w.key("scenario")
                w.string(scenario)
            }
            if let seed {
                w.key("seed")
                w.uint(seed)
            }
        case .open(let s):
            w.string("open")
            scene(s.name)
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
        case .activate(let s):
            w.string("activate")
            scene(s)
        case .deactivate(let s):
            w.string("deactivate")
            scene(s)
        case .background(let s):
            w.string("background")
            scene(s)
        case .suspend(let s):
            w.string("suspend")
            scene(s)
        case .close(let s):
            w.string("close")
            scene(s)
        case .mem(let s, let bytes):
            w.string("mem")
            scene(s)
            w.key("mem")
            w.uint(bytes)
        case .appMem(let app, let bytes):
            w.string("app_mem")
            w.key("app")
            w.string(app)
            w.key("mem")
            w.uint(bytes)
        case .protect(let s, let on):
            w.string("protect")
            scene(s)
            w.key("on")
            w.bool(on)
        case .budget(let budget):
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
        case .pressure(let level):
            w.string("pressure")
            w.key("level")
            w.string(level?.name ?? "auto")
        case .ackProfile(let p):
            w.string("ack_profile")
            scene(p.scene)
            w.key("latency_ms")
            if let ms = p.latencyMs { w.int(ms) } else { w.null() }
            w.key("defer")
            w.bool(p.defers)
        case .settings(let s):
            w.string("settings")
            settings(s, &w)
        case .launch(let app):
            w.string("launch")
            w.key("app")
            w.string(app)
        case .terminate(let app):
            w.string("terminate")
            w.key("app")
            w.string(app)
        case .disconnect(let s):
            w.string("disconnect")
            scene(s)
        case .decide:
            w.string("decide")
        case .timedPressure(let level, let ms):
            w.string("pressure")
            w.key("level")
            w.string(level.name)
            w.key("for_ms")
            w.int(ms)
        }
        w.endObject()
        return w.bytes
    }
}
