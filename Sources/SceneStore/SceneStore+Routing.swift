import CSQLite
import SceneCore

/// Stored Opens and activation conditions (routing): written with each commit, read and
/// checked at load.
extension SceneStore {
    /// Opens and conditions rows written and deleted.
    func writeRouting(_ batch: StoreBatch, _ db: SQLiteConnection, _ st: Statements,
                      _ next: inout EngineCounters) throws(StoreError) {
        for open in batch.opens {
            let s = st.upsertOpen
            let request = open.request
            s.bind(1, open.id.number)
            s.bind(2, try ref(of: request.app, "open \(open.id)"))
            if let session = request.session { s.bind(3, session.rawValue) } else { s.bindNull(3) }
            s.bind(4, request.activate)
            s.bind(5, StorageCodes.code(request.role))
            s.bind(6, open.queuedAt.microseconds)
            s.bind(7, text: request.configurationName)
            var w = ByteWriter()
            RoutingCoding.payload(request.payload, into: &w)
            s.bind(8, blob: w.bytes)
            try run(s, db, "writing open \(open.id)")
            next.nextOpenNumber = max(next.nextOpenNumber, open.id.number &+ 1)
        }
        for id in batch.removedOpens {
            st.deleteOpen.bind(1, id.number)
            try run(st.deleteOpen, db, "deleting open \(id)")
            next.nextOpenNumber = max(next.nextOpenNumber, id.number &+ 1)
        }
        for (session, conditions) in batch.conditions.sorted(by: { $0.key < $1.key }) {
            let s = st.upsertConditions
            s.bind(1, session.rawValue)
            if let can = conditions.canActivateFor { s.bind(2, blob: RoutingCoding.patterns(can)) } else { s.bindNull(2) }
            s.bind(3, blob: RoutingCoding.patterns(conditions.prefersToActivateFor))
            try run(s, db, "writing the activation conditions of \(session)")
        }
        for session in batch.removedConditions {
            st.deleteConditions.bind(1, session.rawValue)
            try run(st.deleteConditions, db, "deleting the activation conditions of \(session)")
        }
    }

    /// The opens rows that check out, in id order; `floor` is raised past every id found,
    /// quarantined rows included. One whose app is not loaded goes with it.
    func loadOpens(_ db: SQLiteConnection, quarantinedApps: Set<Int64>, _ quarantined: inout [QuarantinedRow],
                   floor: inout UInt64) throws(StoreError) -> [PendingOpen] {
        let s = try db.prepare("""
            SELECT id, app, session, activate, role, queued_at, configuration, payload FROM opens ORDER BY id
            """, persistent: false, "loading opens")
        defer { s.finalize() }
        var opens: [PendingOpen] = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading opens") }
            let key = s.int64(0)
            var check = RowCheck(s)
            if RowCheck.isStoredNumber(key) {
                floor = max(floor, UInt64(key) + 1)
            } else {
                check.fail("id \(key) is no open id")
            }
            let app = SessionLoader.app(ref: check.integer(1, "app"), appsByRef, quarantinedApps, &check)
            let session = check.optionalInteger(2, "session")
            if let session, check.isValid, !RowCheck.isStoredNumber(session) { check.fail("session \(session) is no session id") }
            let activate = check.flag(3, "activate")
            let code = check.integer(4, "role")
            let role = StorageCodes.role(code)
            if check.isValid && role == nil { check.fail("role \(code) is not one") }
            let queuedAt = check.timestamp(5, "queued_at")
            let configuration = check.text(6, "configuration")
            if check.isValid && (configuration.isEmpty || configuration.utf8.count > LifecycleEngine.maxConfigurationNameBytes) {
                check.fail("configuration is not 1 to \(LifecycleEngine.maxConfigurationNameBytes) bytes")
            }
            let payload = Self.openPayload(s, 7, &check)
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .opens, key: key, reason: problem))
                continue
            }
            let request = OpenRequest(app: app!, session: session.map { SessionID(UInt64($0)) }, payload: payload!,
                                      activate: activate, role: role!, configurationName: configuration)
            opens.append(PendingOpen(id: OpenID(UInt64(key)), request: request, queuedAt: queuedAt))
        }
        return opens
    }

    private static func openPayload(_ s: Statement, _ c: Int32, _ check: inout RowCheck) -> OpenPayload? {
        guard check.isValid else { return nil }
        guard s.type(c) == SQLITE_BLOB else {
            check.fail("payload is \(RowCheck.typeName(s.type(c))), not bytes")
            return nil
        }
        var r = ByteReader(s.blobBytes(c))
        guard let payload = try? RoutingCoding.payload(&r), r.isAtEnd else {
            check.fail("payload does not decode (\(s.blobBytes(c).count) bytes)")
            return nil
        }
        return payload
    }

    /// The activation_conditions rows that check out. Those of a session not loaded, or not
    /// connected, are left to the engine, which drops them (the scene went with them).
    func loadConditions(_ db: SQLiteConnection, _ quarantined: inout [QuarantinedRow]) throws(StoreError)
        -> [SessionID: ActivationConditions] {
        let s = try db.prepare("""
            SELECT session, can_activate_for, prefers_to_activate_for FROM activation_conditions ORDER BY session
            """, persistent: false, "loading activation conditions")
        defer { s.finalize() }
        var out: [SessionID: ActivationConditions] = [:]
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading activation conditions") }
            let key = s.int64(0)
            var check = RowCheck(s)
            if !RowCheck.isStoredNumber(key) { check.fail("session \(key) is no session id") }
            let can = s.isNull(1) ? nil : Self.patterns(s, 1, "can_activate_for", &check)
            let prefers = Self.patterns(s, 2, "prefers_to_activate_for", &check)
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .activationConditions, key: key, reason: problem))
                continue
            }
            out[SessionID(UInt64(key))] = ActivationConditions(canActivateFor: can, prefersToActivateFor: prefers ?? [])
        }
        return out
    }

    private static func patterns(_ s: Statement, _ c: Int32, _ column: StaticString,
                                 _ check: inout RowCheck) -> [String]? {
        guard check.isValid else { return nil }
        guard s.type(c) == SQLITE_BLOB else {
            check.fail("\(column) is \(RowCheck.typeName(s.type(c))), not bytes")
            return nil
        }
        guard let list = try? RoutingCoding.patterns(s.blobBytes(c)),
              list.count <= LifecycleEngine.maxActivationPatterns,
              list.allSatisfy({ $0.utf8.count <= LifecycleEngine.maxActivationPatternBytes }) else {
            check.fail("\(column) is not a list of patterns")
            return nil
        }
        return list
    }
}
