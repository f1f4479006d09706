import Varlink

extension Verb {
    static let connect = Verb(
        "connect", section: .sessions, synopsis: "APP [OPTIONS]",
        summary: "Connect a new session; prints its id",
        details: "The scene comes to the foreground (foregroundActive) unless --background is given.",
        options: [
            OptionSpec("role", value: "ROLE", "The session's role (default: windowApplication): " + Check.roles.joined(separator: ", ")),
            OptionSpec("configuration", value: "NAME", "The scene configuration's name"),
            OptionSpec("footprint", value: "BYTES", "Memory the scene holds (bytes; K, M, G suffixes, 1024-based)"),
            OptionSpec("background", "Connect into the background instead of the foreground"),
            OptionSpec("user-info", value: "JSON", "The session's userInfo, a JSON object"),
            OptionSpec("protected", "Reclaim the session only as a last resort"),
            OptionSpec("restore-cost", value: "MS", "Declared cost of restoring the session, milliseconds"),
        ],
        arguments: 1...1,
        run: { invocation in
            let options = invocation.options
            var parameters: JSONObject = ["app": .string(try Check.app(invocation.arguments[0]))]
            if let role = options.value("role") { parameters["role"] = .string(try Check.oneOf(role, Check.roles, option: "role")) }
            if let name = options.value("configuration") { parameters["configuration"] = .string(try Check.configurationName(name)) }
            if let info = options.value("user-info") { parameters["userInfo"] = .object(try Check.jsonObject(info, option: "--user-info")) }
            if let bytes = options.value("footprint") { parameters["footprint"] = .int(try Check.footprint(bytes)) }
            if options.flag("background") { parameters["background"] = true }
            if options.flag("protected") { parameters["protected"] = true }
            if let cost = options.value("restore-cost") { parameters["restoreCostMs"] = .int(try Check.count(cost, option: "restore cost", max: Int64(UInt32.max))) }
            let reply = try invocation.call("Connect", parameters)
            try invocation.reportChange(reply, primary: reply.object("session")?.text("id") ?? "?")
        })

    /// A verb that sends one SESSION to `method` and reports the change.
    static func sessionChange(_ name: String, _ method: String, _ summary: String) -> Verb {
        Verb(name, section: .sessions, synopsis: "SESSION", summary: summary, arguments: 1...1, run: { invocation in
            let id = try Check.session(invocation.arguments[0])
            try invocation.reportChange(try invocation.call(method, ["session": .string(id)]))
        })
    }

    static let activate = sessionChange("activate", "Activate", "Bring a session to foregroundActive")
    static let deactivate = sessionChange("deactivate", "Deactivate", "Make an active session foregroundInactive")
    static let background = sessionChange("background", "Background", "Send a session's scene to the background")
    static let disconnect = sessionChange("disconnect", "Disconnect", "Release the scene, keep the session (archived)")
    static let discard = sessionChange("discard", "Discard", "Close a session for ever")

    static let saveState = Verb(
        "save-state", section: .sessions, synopsis: "SESSION JSON | SESSION --base64 DATA | SESSION --clear",
        summary: "Save a session's state-restoration data",
        details: "The data is handed back to the scene when the archived session reconnects. JSON must be an object; --base64 saves opaque bytes instead.",
        options: [
            OptionSpec("base64", value: "DATA", "Save opaque bytes, base64 encoded (RFC 4648)"),
            OptionSpec("clear", "Remove the saved data"),
        ],
        arguments: 1...2,
        run: { invocation in
            let id = try Check.session(invocation.arguments[0])
            let json = invocation.arguments.count > 1 ? invocation.arguments[1] : nil
            let base64 = invocation.options.value("base64")
            let clear = invocation.options.flag("clear")
            guard [json != nil, base64 != nil, clear].filter({ $0 }).count == 1 else {
                throw ControlError.usage("save-state needs exactly one of JSON, --base64 DATA or --clear")
            }
            var parameters: JSONObject = ["session": .string(id)]
            if let json { parameters["restoration"] = ["json": .object(try Check.jsonObject(json, option: "the state"))] }
            if let base64 { parameters["restoration"] = ["base64": .string(try Check.base64(base64, option: "--base64"))] }
            try invocation.reportChange(try invocation.call("SaveState", parameters))
        })

    static let setUserInfo = Verb(
        "set-user-info", section: .sessions, synopsis: "SESSION JSON", summary: "Replace a session's userInfo (a JSON object)",
        arguments: 2...2,
        run: { invocation in
            let id = try Check.session(invocation.arguments[0])
            let info = try Check.jsonObject(invocation.arguments[1], option: "userInfo")
            try invocation.reportChange(try invocation.call("SaveUserInfo", ["session": .string(id), "userInfo": .object(info)]))
        })

    static let setFootprint = Verb(
        "set-footprint", section: .sessions, synopsis: "SESSION BYTES", summary: "Set the memory a session's scene holds",
        arguments: 2...2,
        run: { invocation in
            let id = try Check.session(invocation.arguments[0])
            let bytes = try Check.footprint(invocation.arguments[1])
            try invocation.reportChange(try invocation.call("SetFootprint", ["session": .string(id), "footprint": .int(bytes)]))
        })

    static let setProtected = Verb(
        "set-protected", section: .sessions, synopsis: "SESSION yes|no",
        summary: "Set whether reclaim spares a session",
        arguments: 2...2,
        run: { invocation in
            let id = try Check.session(invocation.arguments[0])
            let flag = try Check.boolean(invocation.arguments[1], option: "protection")
            try invocation.reportChange(try invocation.call("SetProtected", ["session": .string(id), "protected": .bool(flag)]))
        })
}
