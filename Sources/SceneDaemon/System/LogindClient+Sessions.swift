import SystemdKit

/// The sessions: listed once per logind owner, each one's properties read (GetAll), then kept
/// up to date from signals. A session changed again while its read is in flight is read once
/// more after it, never more often: a flood of changes costs one read per reply, not one per
/// signal.
extension LogindClient {
    func onSessionSignal(_ signal: Signal, _ message: BusMessage) {
        switch signal {
        case .sessionNew:
            guard let (id, path) = try? Logind.readSessionSignal(message) else { return }
            sessionPaths[path] = id
            readProperties(path)
        case .sessionRemoved:
            guard let (id, path) = try? Logind.readSessionSignal(message) else { return }
            sessionPaths[path] = nil
            rereadWanted.remove(path)
            state.remove(id)
        case .lock, .unlock:
            guard let path = message.path, let id = sessionPaths[path] else { return }
            state.lockSignal(signal == .lock, for: id)
        case .propertiesChanged:
            guard let path = message.path, let id = sessionPaths[path],
                  let changed = try? Logind.readPropertiesChanged(message) else { return }
            state.apply(changed.change, to: id)
            if changed.rereadNeeded { readProperties(path) }
        default:
            break
        }
    }

    func onListSessions(_ reply: BusReply) {
        listPending = false
        let listed: [Logind.ListedSession]
        switch reply {
        case .success(let message):
            guard let rows = try? Logind.readListSessions(message) else {
                forgetSessions()
                return reportUnavailable("ListSessions: a reply that is not a(susso)")
            }
            listed = rows
        case .failure(let error):
            // Kept sessions that cannot be read again are not to be trusted.
            forgetSessions()
            return reportUnavailable("ListSessions: \(error)")
        }
        state.retain(only: Set(listed.map(\.id)))
        sessionPaths = Dictionary(listed.map { ($0.path, $0.id) }, uniquingKeysWith: { first, _ in first })
        for row in listed {
            snapshotOutstanding.insert(row.path)
            readProperties(row.path)
        }
        snapshotMayBeComplete()
    }

    func readProperties(_ path: String) {
        guard !reading.contains(path) else {
            rereadWanted.insert(path)
            return
        }
        do {
            try send(Logind.getAll(path), as: .properties(path: path))
            reading.insert(path)
            propertyReads += 1
        } catch {
            snapshotOutstanding.remove(path)
        }
    }

    func onProperties(_ path: String, _ reply: BusReply) {
        reading.remove(path)
        defer {
            snapshotOutstanding.remove(path)
            snapshotMayBeComplete()
        }
        // Removed while the read was in flight: it must not come back.
        guard let knownID = sessionPaths[path] else { return }
        if case .success(let message) = reply, let (change, id) = try? Logind.readSessionProperties(message) {
            let sessionID = id ?? knownID
            if sessionID != knownID {
                state.remove(knownID)
                sessionPaths[path] = sessionID
            }
            state.apply(change, to: sessionID)
        }
        // A failed read leaves the session as it was (or unknown): the next change reads again.
        if rereadWanted.remove(path) != nil { readProperties(path) }
    }
}
