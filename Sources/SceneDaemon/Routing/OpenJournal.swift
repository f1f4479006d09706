import SceneCore

/// The journal entry of one Open. A URL may hold secrets (a token, an address): the entry
/// names its scheme and its length, and the whole URL only when scened logs at debug.
enum OpenJournal {
    static func entry(_ request: OpenRequest, _ route: OpenInput.Route, _ result: CommandResult,
                      withURL: Bool) -> LogEntry {
        var fields: [(String, String)] = [("SCENED_APP", request.app.rawValue)]
        let what: String
        switch route {
        case .scheme(let scheme):
            let size = request.payload.urlContexts.first?.url.utf8.count ?? 0
            what = "a \(scheme): URL (\(size) bytes)"
            fields += [("SCENED_URL_SCHEME", scheme), ("SCENED_URL_SIZE", String(size))]
            if withURL, let url = request.payload.urlContexts.first?.url { fields.append(("SCENED_URL", url)) }
        case .activityType(let type):
            what = "a \(type) activity"
            fields.append(("SCENED_ACTIVITY_TYPE", type))
        }
        if let source = request.payload.urlContexts.first?.sourceApplication {
            fields.append(("SCENED_SOURCE_APP", source.rawValue))
        }
        let message: String
        switch result {
        case .open(let id):
            fields.append(("SCENED_OPEN", id.description))
            message = "Stored \(what) for \(request.app) as \(id): it is delivered when \(request.app) launches."
        case .session(let id):
            fields.append(("SCENED_SESSION", id.description))
            message = "Opened \(what) in \(request.app)'s scene \(id)."
        default:
            message = "Opened \(what) in \(request.app)."
        }
        return LogEntry(priority: .info, messageID: MessageID.routedOpen, message: message, fields: fields)
    }
}
