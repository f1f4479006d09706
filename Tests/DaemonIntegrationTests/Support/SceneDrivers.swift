import ScenedTestSupport
import Varlink

/// Drives the daemon's lifecycle commands. Each command returns the daemon's reply (its
/// `events` are the events the command caused, which the Monitor stream must show too).
protocol SceneDriver {
    var name: String { get }
    func connect(_ app: String, background: Bool) throws -> JSONObject
    func activate(_ session: String) throws -> JSONObject
    func deactivate(_ session: String) throws -> JSONObject
    func background(_ session: String) throws -> JSONObject
    func disconnect(_ session: String) throws -> JSONObject
    func discard(_ session: String) throws -> JSONObject
    /// `json` is the text of a JSON object.
    func saveState(_ session: String, json: String) throws -> JSONObject
    func launch(_ app: String) throws -> JSONObject
    func terminate(_ app: String) throws -> JSONObject
    func memoryWarning(_ apps: [String]) throws -> JSONObject
    func beginTask(session: String, name: String) throws -> JSONObject
    func endTask(_ token: String) throws -> JSONObject
}

extension SceneDriver {
    func connect(_ app: String) throws -> JSONObject { try connect(app, background: false) }
}

/// The real scenectl binary, `--json` so that the reply can be read back.
struct SceneCtlDriver: SceneDriver {
    let socketPath: String
    let directory: String
    var name: String { "scenectl" }

    /// Runs `scenectl --socket S --json ARGS...`, expecting exit 0 and one JSON object.
    func ctl(_ arguments: [String]) throws -> JSONObject {
        try Binaries.require(Binaries.scenectl)
        let result = try run([Binaries.scenectl, "--socket", socketPath, "--json"] + arguments,
                             environment: ["SCENED_SOCKET": nil], in: directory)
        guard result.status == 0 else { throw TestFailure("scenectl failed: \(result.summary)") }
        let text = result.stdout.trimmingCharacters(in: " \n")
        guard case .object(let object)? = try? JSONParser.parse(text) else {
            throw TestFailure("scenectl --json did not print one JSON object: \(result.summary)")
        }
        return object
    }

    func connect(_ app: String, background: Bool) throws -> JSONObject {
        try ctl(["connect", app] + (background ? ["--background"] : []))
    }
    func activate(_ session: String) throws -> JSONObject { try ctl(["activate", session]) }
    func deactivate(_ session: String) throws -> JSONObject { try ctl(["deactivate", session]) }
    func background(_ session: String) throws -> JSONObject { try ctl(["background", session]) }
    func disconnect(_ session: String) throws -> JSONObject { try ctl(["disconnect", session]) }
    func discard(_ session: String) throws -> JSONObject { try ctl(["discard", session]) }
    func saveState(_ session: String, json: String) throws -> JSONObject { try ctl(["save-state", session, json]) }
    func launch(_ app: String) throws -> JSONObject { try ctl(["launch", app]) }
    func terminate(_ app: String) throws -> JSONObject { try ctl(["terminate", app]) }
    func memoryWarning(_ apps: [String]) throws -> JSONObject { try ctl(["memory-warning"] + apps) }
    func beginTask(session: String, name: String) throws -> JSONObject { try ctl(["task", "begin", session, "--name", name]) }
    func endTask(_ token: String) throws -> JSONObject { try ctl(["task", "end", token]) }
}

/// The library client, for steps no scenectl verb covers.
struct VarlinkDriver: SceneDriver {
    let socketPath: String
    var name: String { "VarlinkClient" }

    func call(_ method: String, _ parameters: JSONObject) throws -> JSONObject {
        try VarlinkClient(path: socketPath, timeout: .seconds(20)).call("io.scened.Manager." + method, parameters)
    }

    func connect(_ app: String, background: Bool) throws -> JSONObject {
        try call("Connect", ["app": .string(app), "background": .bool(background)])
    }
    func activate(_ session: String) throws -> JSONObject { try call("Activate", ["session": .string(session)]) }
    func deactivate(_ session: String) throws -> JSONObject { try call("Deactivate", ["session": .string(session)]) }
    func background(_ session: String) throws -> JSONObject { try call("Background", ["session": .string(session)]) }
    func disconnect(_ session: String) throws -> JSONObject { try call("Disconnect", ["session": .string(session)]) }
    func discard(_ session: String) throws -> JSONObject { try call("Discard", ["session": .string(session)]) }
    func saveState(_ session: String, json: String) throws -> JSONObject {
        try call("SaveState", ["session": .string(session), "restoration": ["json": try JSONParser.parse(json)]])
    }
    func launch(_ app: String) throws -> JSONObject { try call("Launch", ["app": .string(app)]) }
    func terminate(_ app: String) throws -> JSONObject { try call("Terminate", ["app": .string(app)]) }
    func memoryWarning(_ apps: [String]) throws -> JSONObject {
        try call("MemoryWarning", apps.isEmpty ? [:] : ["apps": .array(apps.map { .string($0) })])
    }
    func beginTask(session: String, name: String) throws -> JSONObject {
        try call("BeginBackgroundTask", ["session": .string(session), "name": .string(name)])
    }
    func endTask(_ token: String) throws -> JSONObject { try call("EndBackgroundTask", ["token": .string(token)]) }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let drop = Set(set)
        var s = Substring(self)
        while let f = s.first, drop.contains(f) { s = s.dropFirst() }
        while let l = s.last, drop.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
