import CSQLite
import SceneCore

extension SceneStore {
    /// Everything stored, ready for `LifecycleEngine(restoring:)`: apps (sorted by id) with their
    /// pending discards, sessions (by id) in the condition and state they had, open tasks (by
    /// token) and the counters. Read in one transaction, so the parts agree.
    ///
    /// Counters are raised past anything found (logged events, session ids, task tokens), so a
    /// sequence number or identifier is never handed out twice.
    public func load() throws(StoreError) -> EngineSnapshot {
        let (db, _) = try openConnection()
        try db.execute("BEGIN", "starting to load")
        defer {
            try? db.execute("COMMIT", "finishing the load")
            // The scan filled the page cache with every page; they are not the hot ones.
            sqlite3_db_release_memory(db.handle)
        }

        let apps = try loadApps(db)
        var nextSessionFloor: UInt64 = 1
        for app in apps {
            for id in app.pendingDiscards { nextSessionFloor = max(nextSessionFloor, id.rawValue &+ 1) }
        }
        let sessions = try loadSessions(db)
        if let last = sessions.last { nextSessionFloor = max(nextSessionFloor, last.id.rawValue &+ 1) }
        let tasks = try loadTasks(db)

        let c = try db.prepare("SELECT clock, next_sequence, next_session, next_task FROM counters WHERE id = 1",
                               persistent: false, "loading the counters")
        defer { c.finalize() }
        let rc = c.step()
        guard rc == SQLITE_ROW else {
            throw rc == SQLITE_DONE ? corrupt("the counters row is missing") : db.error(rc, "loading the counters")
        }
        let nextSequence = max(c.uint64(1), (loggedNewest ?? 0) &+ 1)
        let nextTask = max(c.uint64(3), (tasks.last?.token.rawValue ?? 0) &+ 1)
        return EngineSnapshot(apps: apps, sessions: sessions, tasks: tasks, clock: c.timestamp(0),
                              nextSequence: nextSequence, nextSessionNumber: max(c.uint64(2), nextSessionFloor),
                              nextTaskNumber: nextTask)
    }

    private func loadApps(_ db: SQLiteConnection) throws(StoreError) -> [AppRecord] {
        let s = try db.prepare("""
            SELECT ref, process, pending_discards, idle_since, background_entered_at, launched_at, launches,
                   base_footprint
            FROM apps ORDER BY id
            """, persistent: false, "loading apps")
        defer { s.finalize() }
        var apps: [AppRecord] = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading apps") }
            let ref = s.int64(0)
            let id = try app(ref: ref, "apps row \(ref)")
            guard let process = StorageCodes.processState(s.int64(1)) else {
                throw corrupt("app \(id): unknown process state \(s.int64(1))")
            }
            let pending: [SessionID]
            do throws(ByteReader.Malformed) {
                pending = try RowCoding.pendingDiscards(s.blobBytes(2))
            } catch {
                throw corrupt("app \(id): pending discards are malformed")
            }
            apps.append(AppRecord(id: id, process: process, pendingDiscards: pending, idleSince: s.optionalTimestamp(3),
                                  backgroundEnteredAt: s.optionalTimestamp(4), launchedAt: s.optionalTimestamp(5),
                                  launches: try uint32(s.int64(6), "app \(id): launches"),
                                  baseFootprint: s.uint64(7)))
        }
        return apps
    }

    /// The hot path of start-up: a million rows in about a second (release build). App ids and
    /// configuration names come from the in-memory dictionaries by index, so every session shares
    /// one copy of each; only userInfo and restoration data are decoded per row.
    private func loadSessions(_ db: SQLiteConnection) throws(StoreError) -> [SceneSession] {
        let count = try db.integer("SELECT count(*) FROM sessions", "counting sessions") ?? 0
        let s = try db.prepare("""
            SELECT id, app, role, configuration, user_info, restoration, footprint, condition, scene_state,
                   scene_instance, created_at, last_active_at, background_since, activations, restores,
                   restore_cost_ms, protected, activation_score
            FROM sessions ORDER BY id
            """, persistent: false, "loading sessions")
        defer { s.finalize() }
        var sessions: [SceneSession] = []
        sessions.reserveCapacity(Int(clamping: count))
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading sessions") }
            let id = SessionID(s.uint64(0))
            let app = try self.app(ref: s.int64(1), "session \(id)")
            guard let role = StorageCodes.role(s.int64(2)) else {
                throw corrupt("session \(id): unknown role \(s.int64(2))")
            }
            let configurationRef = s.int64(3)
            guard configurationRef > 0, configurationRef < configurationsByRef.count,
                  let configuration = configurationsByRef[Int(configurationRef)] else {
                throw corrupt("session \(id): unknown configuration reference \(configurationRef)")
            }
            let userInfo = UserInfo(json: s.text(4))
            let restoration: RestorationData?
            switch s.type(5) {
            case SQLITE_NULL: restoration = nil
            case SQLITE_TEXT: restoration = .json(s.text(5))
            case SQLITE_BLOB: restoration = .bytes(Array(s.blobBytes(5)))
            default: throw corrupt("session \(id): restoration data is neither text nor bytes")
            }
            guard let condition = StorageCodes.storedCondition(s.int64(7)) else {
                throw corrupt("session \(id): invalid condition \(s.int64(7))")
            }
            guard let sceneState = StorageCodes.sceneState(s.int64(8)) else {
                throw corrupt("session \(id): unknown scene state \(s.int64(8))")
            }
            sessions.append(SceneSession(
                id: id, app: app, role: role, configurationName: configuration, userInfo: userInfo,
                restoration: restoration, footprint: s.uint64(6), condition: condition, sceneState: sceneState,
                sceneInstance: try uint32(s.int64(9), "session \(id): scene instance"),
                createdAt: s.timestamp(10), lastActiveAt: s.timestamp(11), backgroundSince: s.timestamp(12),
                activations: try uint32(s.int64(13), "session \(id): activations"),
                restores: try uint32(s.int64(14), "session \(id): restores"),
                restoreCostMs: try uint32(s.int64(15), "session \(id): restore cost"),
                isProtected: s.int64(16) != 0, activationScore: s.double(17)))
        }
        return sessions
    }

    private func loadTasks(_ db: SQLiteConnection) throws(StoreError) -> [BackgroundTask] {
        let s = try db.prepare("""
            SELECT token, app, session, name, began_at, expiration_sent_at FROM tasks ORDER BY token
            """, persistent: false, "loading tasks")
        defer { s.finalize() }
        var tasks: [BackgroundTask] = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading tasks") }
            let token = TaskToken(s.uint64(0))
            tasks.append(BackgroundTask(token: token, app: try app(ref: s.int64(1), "task \(token)"),
                                        session: s.isNull(2) ? nil : SessionID(s.uint64(2)), name: s.text(3),
                                        beganAt: s.timestamp(4), expirationSentAt: s.optionalTimestamp(5)))
        }
        return tasks
    }

    // MARK: - Row checks: a value out of range is damage, reported, never trapped on.

    func app(ref: Int64, _ owner: @autoclosure () -> String) throws(StoreError) -> AppID {
        guard ref > 0, ref < appsByRef.count, let app = appsByRef[Int(ref)] else {
            throw corrupt("\(owner()): unknown app reference \(ref)")
        }
        return app
    }

    func uint32(_ value: Int64, _ what: @autoclosure () -> String) throws(StoreError) -> UInt32 {
        guard let v = UInt32(exactly: value) else { throw corrupt("\(what()) \(value) is out of range") }
        return v
    }
}
