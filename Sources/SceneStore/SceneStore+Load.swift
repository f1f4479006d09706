import CSQLite
import SceneCore

extension SceneStore {
    /// `loadChecked().snapshot`.
    public func load() throws(StoreError) -> EngineSnapshot {
        try loadChecked().snapshot
    }

    /// `loadTables()` as an `EngineSnapshot` (sessions sorted by id).
    public func loadChecked() throws(StoreError) -> StoredState {
        let (tables, quarantined, recordingFailure) = try loadTables()
        return StoredState(snapshot: EngineSnapshot(apps: tables.apps,
                                                    sessions: tables.sessions.values.sorted { $0.id < $1.id },
                                                    tasks: tables.tasks, clock: tables.clock,
                                                    nextSequence: tables.nextSequence,
                                                    nextSessionNumber: tables.nextSessionNumber,
                                                    nextTaskNumber: tables.nextTaskNumber),
                           quarantined: quarantined, recordingFailure: recordingFailure)
    }

    /// Everything stored that checks out, ready for `LifecycleEngine(restoring:)`: apps (sorted
    /// by id) with their pending discards, sessions (keyed by id, as the engine holds them: the
    /// engine adopts the table, so a million sessions are not held twice) in the condition and
    /// state they had, open tasks (by token) and the counters; read in one transaction, so the
    /// parts agree. `quarantined`: the rows left out; `recordingFailure`: see `StoredState`.
    ///
    /// Every row is decoded and checked first (types, codes, ranges, JSON, references). One
    /// that fails is quarantined: left in its table, recorded in the quarantine table, reported
    /// in `quarantined`, and not loaded. A session or task whose app is quarantined goes with it
    /// (the engine holds no session without its app), as does a task whose session does.
    ///
    /// Counters are raised past anything found, quarantined rows included (logged events,
    /// session ids, pending discards, task tokens), so a sequence number or identifier is never
    /// handed out twice.
    ///
    /// `deferringPayloads`: userInfo and restoration data larger than
    /// `savedPayloadInlineLimit` are not read, only their sizes (`SavedPayload.stored`): the
    /// daemon reads them when a caller needs them (`SavedDataReader`), and checks them then.
    public func loadTables(deferringPayloads: Bool = false) throws(StoreError)
        -> (tables: EngineTables, quarantined: [QuarantinedRow], recordingFailure: StoreError?) {
        let (db, _) = try openConnection()
        var quarantined = dictionaryQuarantine
        var loaded: (apps: [AppRecord], sessions: SessionTable, tasks: [BackgroundTask], counters: EngineCounters)
        try db.execute("BEGIN", "starting to load")
        do throws(StoreError) {
            var floors = Floors()
            let (apps, quarantinedApps) = try loadApps(db, &quarantined, &floors)
            let sessions = try loadSessions(db, quarantinedApps: quarantinedApps, deferring: deferringPayloads,
                                            &quarantined, &floors)
            let tasks = try loadTasks(db, sessions: sessions, quarantinedApps: quarantinedApps, &quarantined, &floors)
            let stored = try readCounters(db)
            loaded = (apps, sessions, tasks,
                      EngineCounters(clock: stored.clock,
                                     nextSequence: max(stored.nextSequence, (loggedNewest ?? 0) &+ 1),
                                     nextSessionNumber: max(stored.nextSessionNumber, floors.session),
                                     nextTaskNumber: max(stored.nextTaskNumber, floors.task)))
            try db.execute("COMMIT", "finishing the load")
        } catch {
            try? db.execute("ROLLBACK", "finishing the load")
            throw error
        }
        // The scan filled the page cache with every page; they are not the hot ones.
        sqlite3_db_release_memory(db.handle)

        var recordingFailure: StoreError?
        do throws(StoreError) { try record(quarantined, db) } catch { recordingFailure = error }
        let c = loaded.counters
        sequenceFloor = max(sequenceFloor, c.nextSequence)
        sessionFloor = max(sessionFloor, c.nextSessionNumber)
        taskFloor = max(taskFloor, c.nextTaskNumber)
        let tables = EngineTables(apps: loaded.apps, sessions: loaded.sessions, tasks: loaded.tasks, clock: c.clock,
                                  nextSequence: c.nextSequence, nextSessionNumber: c.nextSessionNumber,
                                  nextTaskNumber: c.nextTaskNumber)
        loaded.sessions = SessionTable()  // `tables` holds the only reference: the engine adopts it without a copy
        return (tables, quarantined, recordingFailure)
    }

    /// The lowest counters above every identifier a row holds.
    private struct Floors {
        var session: UInt64 = 1
        var task: UInt64 = 1

        mutating func session(_ value: Int64) {
            if RowCheck.isStoredNumber(value) { session = max(session, UInt64(value) + 1) }
        }

        mutating func task(_ value: Int64) {
            if RowCheck.isStoredNumber(value) { task = max(task, UInt64(value) + 1) }
        }
    }

    /// Apps that check out, and the refs of those that do not (their sessions and tasks go too).
    private func loadApps(_ db: SQLiteConnection, _ quarantined: inout [QuarantinedRow], _ floors: inout Floors)
        throws(StoreError) -> ([AppRecord], Set<Int64>) {
        let s = try db.prepare("""
            SELECT ref, process, pending_discards, idle_since, background_entered_at, launched_at, launches,
                   base_footprint
            FROM apps ORDER BY id
            """, persistent: false, "loading apps")
        defer { s.finalize() }
        var apps: [AppRecord] = []
        var rejected: Set<Int64> = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading apps") }
            let ref = s.int64(0)
            // Reported already when the dictionaries were read.
            guard ref > 0, ref < appsByRef.count, let id = appsByRef[Int(ref)] else {
                rejected.insert(ref)
                continue
            }
            var check = RowCheck(s)
            let code = check.integer(1, "process")
            let process = StorageCodes.processState(code)
            if check.isValid && process == nil { check.fail("process state \(code) is not one") }
            var pending: [SessionID] = []
            switch s.type(2) {
            case SQLITE_NULL:
                break
            case SQLITE_BLOB:
                do throws(ByteReader.Malformed) {
                    pending = try RowCoding.pendingDiscards(s.blobBytes(2))
                } catch {
                    check.fail("pending_discards do not decode")
                }
            default:
                check.fail("pending_discards is \(RowCheck.typeName(s.type(2))), not bytes")
            }
            for p in pending {
                floors.session(Int64(bitPattern: p.rawValue))
                if !RowCheck.isStoredNumber(Int64(bitPattern: p.rawValue)) {
                    check.fail("pending discard \(p.rawValue) is no session id")
                }
            }
            let idleSince = check.optionalTimestamp(3, "idle_since")
            let backgroundEnteredAt = check.optionalTimestamp(4, "background_entered_at")
            let launchedAt = check.optionalTimestamp(5, "launched_at")
            let launches = check.uint32(6, "launches")
            let baseFootprint = check.unsigned(7, "base_footprint")
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .apps, key: ref, reason: "app \(id): \(problem)"))
                rejected.insert(ref)
                continue
            }
            apps.append(AppRecord(id: id, process: process!, pendingDiscards: pending, idleSince: idleSince,
                                  backgroundEnteredAt: backgroundEnteredAt, launchedAt: launchedAt, launches: launches,
                                  baseFootprint: baseFootprint))
        }
        return (apps, rejected)
    }

    /// The hot path of start-up: a million rows in about a second (release build). App ids and
    /// configuration names come from the in-memory dictionaries by index, so every session shares
    /// one copy of each; only userInfo and restoration data are decoded (and checked) per row.
    private func loadSessions(_ db: SQLiteConnection, quarantinedApps: Set<Int64>, deferring: Bool,
                              _ quarantined: inout [QuarantinedRow], _ floors: inout Floors)
        throws(StoreError) -> SessionTable {
        let count = try db.integer("SELECT count(*) FROM sessions", "counting sessions") ?? 0
        // Deferred, a large payload reads as NULL: SQLite then never loads its overflow pages.
        let limit = savedPayloadInlineLimit
        let payloads = deferring
            ? "CASE WHEN user_info_size <= \(limit) THEN user_info END, "
                + "CASE WHEN restoration_size <= \(limit) THEN restoration END"
            : "user_info, restoration"
        let s = try db.prepare("""
            SELECT id, app, role, configuration, \(payloads), footprint, condition, scene_state,
                   scene_instance, created_at, last_active_at, background_since, activations, restores,
                   restore_cost_ms, protected, activation_score, user_info_size, restoration_size
            FROM sessions ORDER BY id
            """, persistent: false, "loading sessions")
        defer { s.finalize() }
        var sessions = SessionTable()
        sessions.reserveCapacity(Int(clamping: count))
        // Local copies: elements of a let array are lent to the calls below without the
        // reference counting (and exclusivity checks) that reading the class's properties costs.
        let appsByRef = self.appsByRef, configurationsByRef = self.configurationsByRef
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading sessions") }
            let key = s.int64(0)
            floors.session(key)
            var check = RowCheck(s)
            if !RowCheck.isStoredNumber(key) { check.fail("id \(key) is no session id") }
            let appRef = check.integer(1, "app")
            let app = Self.app(ref: appRef, appsByRef, quarantinedApps, &check)
            let roleCode = check.integer(2, "role")
            let role = StorageCodes.role(roleCode)
            if check.isValid && role == nil { check.fail("role \(roleCode) is not one") }
            let configurationRef = check.integer(3, "configuration")
            var configuration = ""
            if configurationRef > 0, configurationRef < configurationsByRef.count,
               let name = configurationsByRef[Int(configurationRef)] {
                configuration = name
            } else {
                check.fail("configuration reference \(configurationRef) names no configuration")
            }
            var userInfo: SavedPayload<UserInfo>
            var restoration: SavedPayload<RestorationData?>
            if deferring {
                let userInfoSize = check.integer(18, "user_info_size")
                let restorationSize = check.integer(19, "restoration_size")
                if check.isValid && (userInfoSize < 0 || restorationSize < 0) {
                    check.fail("a payload size is negative (\(userInfoSize), \(restorationSize))")
                }
                userInfo = userInfoSize > limit ? .stored(byteCount: Int(userInfoSize))
                    : .held(UserInfo(json: check.jsonObject(4, "user_info")))
                restoration = restorationSize > limit ? .stored(byteCount: Int(restorationSize))
                    : .held(check.restoration(5, "restoration"))
            } else {
                userInfo = .held(UserInfo(json: check.jsonObject(4, "user_info")))
                restoration = .held(check.restoration(5, "restoration"))
            }
            let footprint = check.unsigned(6, "footprint")
            let conditionCode = check.integer(7, "condition")
            let condition = StorageCodes.storedCondition(conditionCode)
            if check.isValid && condition == nil { check.fail("condition \(conditionCode) is neither live nor archived") }
            let stateCode = check.integer(8, "scene_state")
            let sceneState = StorageCodes.sceneState(stateCode)
            if check.isValid && sceneState == nil { check.fail("scene state \(stateCode) is not one") }
            let sceneInstance = check.uint32(9, "scene_instance")
            let createdAt = check.timestamp(10, "created_at")
            let lastActiveAt = check.timestamp(11, "last_active_at")
            let backgroundSince = check.timestamp(12, "background_since")
            let activations = check.uint32(13, "activations")
            let restores = check.uint32(14, "restores")
            let restoreCost = check.uint32(15, "restore_cost_ms")
            let isProtected = check.flag(16, "protected")
            switch s.type(17) {
            case SQLITE_NULL, SQLITE_FLOAT, SQLITE_INTEGER: break
            default: check.fail("activation_score is \(RowCheck.typeName(s.type(17))), not a number")
            }
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .sessions, key: key, reason: problem))
                continue
            }
            // Keys are the table's primary key: each id comes once.
            sessions[SessionID(UInt64(key))] = SceneSession(
                id: SessionID(UInt64(key)), app: app!, role: role!, configurationName: configuration,
                savedUserInfo: userInfo, savedRestoration: restoration, footprint: footprint,
                condition: condition!, sceneState: sceneState!, sceneInstance: sceneInstance, createdAt: createdAt,
                lastActiveAt: lastActiveAt, backgroundSince: backgroundSince, activations: activations,
                restores: restores, restoreCostMs: restoreCost, isProtected: isProtected, activationScore: s.double(17))
        }
        return sessions
    }

    /// `sessions`: the loaded ones. A task must name a loaded session of its own app, or none.
    private func loadTasks(_ db: SQLiteConnection, sessions: SessionTable, quarantinedApps: Set<Int64>,
                           _ quarantined: inout [QuarantinedRow], _ floors: inout Floors)
        throws(StoreError) -> [BackgroundTask] {
        let s = try db.prepare("""
            SELECT token, app, session, name, began_at, expiration_sent_at FROM tasks ORDER BY token
            """, persistent: false, "loading tasks")
        defer { s.finalize() }
        var tasks: [BackgroundTask] = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading tasks") }
            let key = s.int64(0)
            floors.task(key)
            var check = RowCheck(s)
            if !RowCheck.isStoredNumber(key) { check.fail("token \(key) is no task token") }
            let appRef = check.integer(1, "app")
            let app = Self.app(ref: appRef, appsByRef, quarantinedApps, &check)
            var session: SessionID?
            if let n = check.optionalInteger(2, "session") {
                floors.session(n)
                if !RowCheck.isStoredNumber(n) {
                    check.fail("session \(n) is no session id")
                } else if let owner = sessions[SessionID(UInt64(n))] {
                    if let app, owner.app != app { check.fail("its session s\(n) belongs to another app, \(owner.app)") }
                    session = owner.id
                } else {
                    check.fail("its session s\(n) is not loaded (quarantined, or not stored)")
                }
            }
            let name = check.text(3, "name")
            let beganAt = check.timestamp(4, "began_at")
            let expirationSentAt = check.optionalTimestamp(5, "expiration_sent_at")
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .tasks, key: key, reason: problem))
                continue
            }
            tasks.append(BackgroundTask(token: TaskToken(UInt64(key)), app: app!, session: session, name: name,
                                        beganAt: beganAt, expirationSentAt: expirationSentAt))
        }
        return tasks
    }

    // MARK: - Row checks: a value out of range is damage, reported, never trapped on.

    /// The app a session or task row names, if it is stored and not quarantined.
    private static func app(ref: Int64, _ appsByRef: [AppID?], _ quarantinedApps: Set<Int64>,
                            _ check: inout RowCheck) -> AppID? {
        guard check.isValid else { return nil }
        guard ref > 0, ref < appsByRef.count, let app = appsByRef[Int(ref)] else {
            check.fail("app reference \(ref) names no app")
            return nil
        }
        if quarantinedApps.contains(ref) { check.fail("its app \(app) (apps row \(ref)) is quarantined") }
        return app
    }
}
