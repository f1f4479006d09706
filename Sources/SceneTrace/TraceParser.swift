import SceneCore
import Varlink

/// A trace line that could not be read, with its 1-based line number.
public struct TraceError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public init(line: Int, _ message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { "line \(line): \(message)" }
}

/// Reads the JSON-lines trace format (see `Trace`). Checks each line on its own (JSON syntax,
/// known event, required fields and their types) and the sequence as a whole (time never goes
/// backwards; a scene is opened before it is used and not opened twice while open).
public enum TraceParser {
    public static func parse(_ text: String) throws(TraceError) -> Trace {
        try parse(Array(text.utf8))
    }

    public static func parse(_ bytes: [UInt8]) throws(TraceError) -> Trace {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(TraceError) in try parse(buffer) }
        }.get()
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) throws(TraceError) -> Trace {
        var trace = Trace(events: [])
        var open = Set<String>()
        var known = Set<String>()
        var lastTime: Int64 = .min
        var lineNumber = 0
        var start = 0
        let count = bytes.count
        while start < count {
            lineNumber += 1
            var end = start
            while end < count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            let line = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            start = end + 1
            guard let event = try parseLine(line, number: lineNumber) else { continue }
            if event.time < lastTime {
                throw TraceError(line: lineNumber, "time goes backwards (t=\(event.time) after t=\(lastTime))")
            }
            lastTime = event.time
            try check(event, open: &open, known: &known)
            if case .meta(let scenario, let seed) = event.kind {
                trace.scenario = scenario ?? trace.scenario
                trace.seed = seed ?? trace.seed
            }
            if case .settings(let settings) = event.kind { trace.settings = settings }
            trace.events.append(event)
        }
        return trace
    }

    /// Sequence rules: the scene a line names must be open (or, for ack profiles, have been
    /// opened at some point or be opened later: profiles may come first).
    static func check(_ event: TraceEvent, open: inout Set<String>, known: inout Set<String>) throws(TraceError) {
        func mustBeOpen(_ scene: String) throws(TraceError) {
            guard open.contains(scene) else {
                throw TraceError(line: event.line, "scene \"\(scene)\" is not open")
            }
        }
        switch event.kind {
        case .open(let scene):
            guard !open.contains(scene.name) else {
                throw TraceError(line: event.line, "scene \"\(scene.name)\" is already open")
            }
            open.insert(scene.name)
            known.insert(scene.name)
        case .activate(let s), .deactivate(let s), .background(let s), .suspend(let s), .disconnect(let s):
            try mustBeOpen(s)
        case .close(let s):
            try mustBeOpen(s)
            open.remove(s)
        case .mem(let s, _), .protect(let s, _):
            try mustBeOpen(s)
        case .meta, .appMem, .budget, .pressure, .ackProfile, .settings, .launch, .terminate, .timedPressure, .decide:
            break
        }
    }

    /// One line; nil for a blank or comment line.
    static func parseLine(_ line: UnsafeRawBufferPointer, number: Int) throws(TraceError) -> TraceEvent? {
        guard let object = try object(line, number: number) else { return nil }
        var fields = Fields(object: object, line: number)
        let time = try fields.time()
        let ev = try fields.string("ev")
        let kind = try self.kind(ev, &fields)
        try fields.finish(ev)
        return TraceEvent(time: time, kind, line: number)
    }

    /// The JSON object a line holds; nil for a blank or comment line.
    static func object(_ line: UnsafeRawBufferPointer, number: Int) throws(TraceError) -> JSONObject? {
        var first = 0
        while first < line.count, line[first] == UInt8(ascii: " ") || line[first] == UInt8(ascii: "\t")
            || line[first] == UInt8(ascii: "\r") {
            first += 1
        }
        if first == line.count || line[first] == UInt8(ascii: "#") { return nil }
        let value: JSONValue
        do {
            value = try JSONParser.parse(UnsafeRawBufferPointer(rebasing: line[first...]))
        } catch {
            throw TraceError(line: number, "invalid JSON: \(error.reason) at column \(first + error.offset + 1)")
        }
        guard let object = value.objectValue else { throw TraceError(line: number, "an event must be a JSON object") }
        return object
    }

    /// The event an `ev` names, from its members.
    static func kind(_ ev: String, _ fields: inout Fields) throws(TraceError) -> TraceEvent.Kind {
        switch ev {
        case "meta": return try meta(&fields)
        case "open": return .open(try scene(&fields))
        case "activate": return .activate(try fields.sceneName())
        case "deactivate": return .deactivate(try fields.sceneName())
        case "background": return .background(try fields.sceneName())
        case "suspend": return .suspend(try fields.sceneName())
        case "close": return .close(try fields.sceneName())
        case "mem": return .mem(scene: try fields.sceneName(), bytes: try fields.bytes("mem"))
        case "app_mem": return .appMem(app: try fields.string("app"), bytes: try fields.bytes("mem"))
        case "protect": return try protect(&fields)
        case "budget": return .budget(try budget(&fields))
        case "pressure": return try pressure(&fields)
        case "ack_profile": return .ackProfile(try ackProfile(&fields))
        case "settings": return .settings(try settings(&fields))
        case "launch": return .launch(app: try fields.string("app"))
        case "terminate": return .terminate(app: try fields.string("app"))
        case "disconnect": return .disconnect(try fields.sceneName())
        case "decide": return .decide
        default: throw fields.error("unknown event \"\(ev)\"")
        }
    }

    /// Generator provenance; other members are free.
    static func meta(_ fields: inout Fields) throws(TraceError) -> TraceEvent.Kind {
        let kind = TraceEvent.Kind.meta(scenario: try fields.optionalString("scenario"),
                                        seed: try fields.optionalBytes("seed"))
        fields.ignoreRest()
        return kind
    }

    static func scene(_ fields: inout Fields) throws(TraceError) -> TraceScene {
        var flags: [String] = []
        if let raw = fields.take("flags"), !raw.isNull {
            guard let array = raw.arrayValue else { throw fields.error("\"flags\" must be an array of strings") }
            for item in array {
                guard let flag = item.stringValue else { throw fields.error("\"flags\" must be an array of strings") }
                flags.append(flag)
            }
        }
        let restore = try fields.optionalBytes("restore_ms") ?? 0
        guard restore <= UInt64(UInt32.max) else { throw fields.error("\"restore_ms\" is too large") }
        return TraceScene(name: try fields.sceneName(), app: try fields.optionalString("app"),
                          bytes: try fields.bytes("mem"), restoreMs: UInt32(restore),
                          stateBytes: try fields.optionalBytes("state_bytes") ?? 0, flags: flags)
    }

    static func protect(_ fields: inout Fields) throws(TraceError) -> TraceEvent.Kind {
        guard let on = fields.take("on")?.boolValue else { throw fields.error("\"on\" must be true or false") }
        return .protect(scene: try fields.sceneName(), on: on)
    }

    static func budget(_ fields: inout Fields) throws(TraceError) -> TraceBudget {
        let hasBytes = fields.has("bytes")
        let hasScale = fields.has("scale")
        guard hasBytes != hasScale else { throw fields.error("a budget needs exactly one of \"bytes\" and \"scale\"") }
        if hasScale {
            guard let scale = fields.take("scale")?.doubleValue, scale > 0, scale.isFinite else {
                throw fields.error("\"scale\" must be a positive number")
            }
            return .scale(scale)
        }
        if fields.peek("bytes")?.isNull == true {
            _ = fields.take("bytes")
            return .unlimited
        }
        return .bytes(try fields.bytes("bytes"))
    }

    /// An explicit level (until the next one), or with `for_ms` an override that lapses.
    static func pressure(_ fields: inout Fields) throws(TraceError) -> TraceEvent.Kind {
        let name = try fields.string("level")
        if let raw = fields.take("for_ms"), !raw.isNull {
            guard let ms = raw.doubleValue, ms > 0, ms < 9e15 else {
                throw fields.error("\"for_ms\" must be a positive number of milliseconds")
            }
            guard let level = PressureLevel(name: name == "warn" ? "warning" : name), level > .normal else {
                throw fields.error("a pressure with \"for_ms\" needs the level warning or critical")
            }
            return .timedPressure(level, durationMs: Int64(ms.rounded()))
        }
        switch name {
        case "auto": return .pressure(nil)
        case "warn": return .pressure(.warning)
        default:
            guard let level = PressureLevel(name: name) else {
                throw fields.error("unknown pressure level \"\(name)\" (normal, warn, warning, critical, auto)")
            }
            return .pressure(level)
        }
    }

    static func ackProfile(_ fields: inout Fields) throws(TraceError) -> AckProfile {
        let scene = try fields.sceneName()
        var latency: Int64?
        if let raw = fields.take("latency_ms"), !raw.isNull {
            // Bounded like "t": a larger number has no Int64 of milliseconds to convert to.
            guard let ms = raw.doubleValue, ms >= 0, ms < 9e15 else {
                throw fields.error("\"latency_ms\" must be a non-negative number below 9e15, or null")
            }
            latency = Int64(ms.rounded())
        }
        var defers = false
        if let raw = fields.take("defer") {
            guard let flag = raw.boolValue else { throw fields.error("\"defer\" must be true or false") }
            defers = flag
        }
        return AckProfile(scene: scene, latencyMs: latency, defers: defers)
    }

    /// The members of one event, taken one by one so that leftovers can be reported.
    struct Fields {
        var object: JSONObject
        let line: Int
        var ignoreUnknown = false

        init(object: JSONObject, line: Int) {
            self.object = object
            self.line = line
        }

        func error(_ message: String) -> TraceError { TraceError(line: line, message) }
        func has(_ key: String) -> Bool { object.contains(key: key) }
        func peek(_ key: String) -> JSONValue? { object[key] }
        mutating func take(_ key: String) -> JSONValue? { object.removeValue(forKey: key) }
        mutating func ignoreRest() { ignoreUnknown = true }

        mutating func time() throws(TraceError) -> Int64 {
            guard let raw = take("t") else { throw error("missing \"t\"") }
            guard let t = raw.doubleValue, t.isFinite, t >= 0, t < 9e15 else {
                throw error("\"t\" must be a non-negative number of milliseconds")
            }
            return Int64(t.rounded())
        }

        mutating func string(_ key: String) throws(TraceError) -> String {
            guard let raw = take(key) else { throw error("missing \"\(key)\"") }
            guard let s = raw.stringValue else { throw error("\"\(key)\" must be a string") }
            return s
        }

        mutating func optionalString(_ key: String) throws(TraceError) -> String? {
            guard let raw = take(key), !raw.isNull else { return nil }
            guard let s = raw.stringValue else { throw error("\"\(key)\" must be a string") }
            return s
        }

        mutating func sceneName() throws(TraceError) -> String {
            let name = try string("scene")
            guard !name.isEmpty else { throw error("\"scene\" must not be empty") }
            return name
        }

        mutating func bytes(_ key: String) throws(TraceError) -> UInt64 {
            guard let value = try optionalBytes(key) else { throw error("missing \"\(key)\"") }
            return value
        }

        /// A non-negative count (bytes, ms); `180e6` and `1.5e9` are accepted.
        mutating func optionalBytes(_ key: String) throws(TraceError) -> UInt64? {
            guard let raw = take(key), !raw.isNull else { return nil }
            if case .int(let i) = raw {
                guard i >= 0 else { throw error("\"\(key)\" must not be negative") }
                return UInt64(i)
            }
            guard let d = raw.doubleValue, d.isFinite, d >= 0, d < 1.8e19 else {
                throw error("\"\(key)\" must be a non-negative number")
            }
            return UInt64(d.rounded())
        }

        /// Leftover members are an error (a misspelt field would otherwise be silently ignored),
        /// except names starting with `_`, free for annotations.
        func finish(_ ev: String) throws(TraceError) {
            guard !ignoreUnknown, let key = object.keys.first(where: { !$0.hasPrefix("_") }) else { return }
            throw error("unknown field \"\(key)\" in a \(ev) event")
        }
    }
}
