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
        var snapshot = EngineSnapshot(apps: tables.apps, sessions: tables.sessions.values.sorted { $0.id < $1.id },
                                      tasks: tables.tasks, clock: tables.clock, nextSequence: tables.nextSequence,
                                      nextSessionNumber: tables.nextSessionNumber, nextTaskNumber: tables.nextTaskNumber)
        snapshot.schedules = tables.schedules
        snapshot.notifications = tables.notifications
        snapshot.nextNotificationNumber = tables.nextNotificationNumber
        snapshot.pendingOpens = tables.pendingOpens
        snapshot.nextOpenNumber = tables.nextOpenNumber
        snapshot.activationConditions = tables.activationConditions
        return StoredState(snapshot: snapshot, quarantined: quarantined, recordingFailure: recordingFailure)
    }

    /// Everything stored that checks out, ready for `LifecycleEngine(restoring:)`: apps (sorted
    /// by id) with their pending discards, sessions (keyed by id, as the engine holds them: the
    /// engine adopts the table, so a million sessions are not held twice) in the condition and
    /// state they had, open tasks (by token), scheduled tasks (by app and identifier), pending
    /// notifications (by id) and the counters; read in one transaction, so the parts agree.
    /// `quarantined`: the rows left out; `recordingFailure`: see `StoredState`.
    ///
    /// Every row is decoded and checked first (types, codes, ranges, JSON, references). One
    /// that fails is quarantined: left in its table, recorded in the quarantine table, reported
    /// in `quarantined`, and not loaded. A session, task, scheduled task or notification whose
    /// app is quarantined goes with it (the engine holds no record without its app), as does a
    /// task whose session does.
    ///
    /// Counters are raised past anything found, quarantined rows included (logged events,
    /// session ids, pending discards, task tokens, notification ids), so a sequence number or
    /// identifier is never handed out twice.
    ///
    /// `deferringPayloads`: userInfo and restoration data larger than
    /// `savedPayloadInlineLimit` are not read, only their sizes (`SavedPayload.stored`): the
    /// daemon reads them when a caller needs them (`SavedDataReader`), and checks them then.
    ///
    /// `parallelAbove`: a sessions table spanning this many ids or more is read by two threads.
    public func loadTables(deferringPayloads: Bool = false, parallelAbove: Int = SceneStore.parallelLoadSpan) throws(StoreError)
        -> (tables: EngineTables, quarantined: [QuarantinedRow], recordingFailure: StoreError?) {
        let (db, _) = try openConnection()
        var quarantined = dictionaryQuarantine
        var loaded: (apps: [AppRecord], sessions: SessionTable, tasks: [BackgroundTask], counters: EngineCounters)
        var work: (schedules: [ScheduledTask], notifications: [PendingNotification]) = ([], [])
        var routing: (opens: [PendingOpen], conditions: [SessionID: ActivationConditions]) = ([], [:])
        // IMMEDIATE: the write lock, held to the end, keeps any commit out while a second
        // connection reads part of the sessions (see loadSessions); nothing is written.
        try db.execute("BEGIN IMMEDIATE", "starting to load")
        do throws(StoreError) {
            var floors = Floors()
            let (apps, quarantinedApps) = try loadApps(db, &quarantined, &floors)
            let sessions = try loadSessions(db, quarantinedApps: quarantinedApps, deferring: deferringPayloads,
                                            parallelAbove: parallelAbove,
                                            &quarantined, &floors)
            let tasks = try loadTasks(db, sessions: sessions, quarantinedApps: quarantinedApps, &quarantined, &floors)
            work = (try loadSchedules(db, quarantinedApps: quarantinedApps, &quarantined),
                    try loadNotifications(db, quarantinedApps: quarantinedApps, &quarantined, floor: &floors.notification))
            routing = (try loadOpens(db, quarantinedApps: quarantinedApps, &quarantined, floor: &floors.open),
                       try loadConditions(db, &quarantined))
            let stored = try readCounters(db)
            loaded = (apps, sessions, tasks,
                      EngineCounters(clock: stored.clock,
                                     nextSequence: max(stored.nextSequence, (loggedNewest ?? 0) &+ 1),
                                     nextSessionNumber: max(stored.nextSessionNumber, floors.session),
                                     nextTaskNumber: max(stored.nextTaskNumber, floors.task),
                                     nextNotificationNumber: max(stored.nextNotificationNumber, floors.notification),
                                     nextOpenNumber: max(stored.nextOpenNumber, floors.open)))
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
        notificationFloor = max(notificationFloor, c.nextNotificationNumber)
        openFloor = max(openFloor, c.nextOpenNumber)
        var tables = EngineTables(apps: loaded.apps, sessions: loaded.sessions, tasks: loaded.tasks, clock: c.clock,
                                  nextSequence: c.nextSequence, nextSessionNumber: c.nextSessionNumber,
                                  nextTaskNumber: c.nextTaskNumber)
        tables.schedules = work.schedules
        tables.notifications = work.notifications
        tables.nextNotificationNumber = c.nextNotificationNumber
        tables.pendingOpens = routing.opens
        tables.nextOpenNumber = c.nextOpenNumber
        tables.activationConditions = routing.conditions
        loaded.sessions = SessionTable()  // `tables` holds the only reference: the engine adopts it without a copy
        return (tables, quarantined, recordingFailure)
    }

    /// Below this span of session ids one thread reads them all: a second connection and
    /// thread cost more than they save.
    public static let parallelLoadSpan = 50_000

    /// The lowest counters above every identifier a row holds.
    private struct Floors {
        var session: UInt64 = 1
        var task: UInt64 = 1
        var notification: UInt64 = 1
        var open: UInt64 = 1

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
                   base_footprint, active_modes
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
            let modesCode = check.integer(8, "active_modes")
            let activeModes = StorageCodes.backgroundModes(modesCode)
            if check.isValid && activeModes == nil { check.fail("active_modes \(modesCode) names no set of modes") }
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .apps, key: ref, reason: "app \(id): \(problem)"))
                rejected.insert(ref)
                continue
            }
            apps.append(AppRecord(id: id, process: process!, pendingDiscards: pending, idleSince: idleSince,
                                  backgroundEnteredAt: backgroundEnteredAt, launchedAt: launchedAt, launches: launches,
                                  baseFootprint: baseFootprint, activeModes: activeModes!))
        }
        return (apps, rejected)
    }

    /// The sessions rows that check out, into one array in id order that the table adopts. A
    /// table spanning `parallelAbove` ids or more is read in two id ranges at once: the upper on
    /// a helper thread with a connection of its own, the lower here; each writes into its own
    /// part of the array, sized by its id span or by counting its rows. Both see the same snapshot: the
    /// caller's transaction holds the write lock (BEGIN IMMEDIATE), so no commit can come
    /// between this transaction's start and the helper's, and the helper is joined before it ends.
    private func loadSessions(_ db: SQLiteConnection, quarantinedApps: Set<Int64>, deferring: Bool,
                              parallelAbove: Int, _ quarantined: inout [QuarantinedRow], _ floors: inout Floors)
        throws(StoreError) -> SessionTable {
        let loader = SessionLoader(appsByRef: appsByRef, configurationsByRef: configurationsByRef,
                                   quarantinedApps: quarantinedApps, deferring: deferring)
        guard let parts = try sessionParts(db, parallelAbove: parallelAbove) else { return SessionTable() }
        let (ranges, counts) = parts
        lastLoadParts = counts
        let total = counts.reduce(0, +)
        var found: [SessionLoader.Rows] = []
        var failure: StoreError?
        let sessions = [SceneSession](unsafeUninitializedCapacity: total) { buffer, initialized in
            // At least the rows at `low` and `high`: never an empty buffer.
            guard let base = buffer.baseAddress else { return }
            HugePages.advise(UnsafeMutableRawPointer(base), bytes: total * MemoryLayout<SceneSession>.stride)
            switch readSessions(db, loader, ranges, counts, into: base, &found) {
            case .failure(let e):
                failure = e
                initialized = 0
            case .success(let written):
                initialized = written
            }
        }
        if let failure { throw failure }
        for rows in found {
            quarantined += rows.quarantined
            floors.session = max(floors.session, rows.sessionFloor)
        }
        do throws(LifecycleError) {
            return try SessionTable(adopting: sessions, name: "sessions")
        } catch {
            // Keys are the table's primary key and the ranges are disjoint: each id comes once.
            throw corrupt("\(error)")
        }
    }

    /// The id ranges the sessions are read in (one, or two at `parallelAbove` ids or more,
    /// noted in `lastLoadRanges` even if counting fails), and how many rows each range's part
    /// of the array is sized for; nil for an empty table.
    private func sessionParts(_ db: SQLiteConnection, parallelAbove: Int) throws(StoreError)
        -> (ranges: [ClosedRange<Int64>], counts: [Int])? {
        guard let low = try db.integer("SELECT min(id) FROM sessions", "finding the first session"),
              let high = try db.integer("SELECT max(id) FROM sessions", "finding the last session") else {
            return nil
        }
        // Split by the id span, which costs nothing to know (a count reads every page): ids are
        // handed out in order, so the span is the rows ever made, and the live ones are spread
        // over it; a lopsided split is only slower, never wrong. Damaged rows may hold any ids:
        // a span too wide for Int64 is read in one range.
        let (span, overflow) = high.subtractingReportingOverflow(low)
        let split = !overflow && span > 0 && span >= Int64(parallelAbove)
        let ranges = split ? [low...(low + span / 2), (low + span / 2 + 1)...high] : [low...high]
        lastLoadRanges = ranges.count
        // Counting the whole table is quick (SQLite counts a b-tree's cells without reading
        // rows), counting a range is not, and would come before either thread starts: where ids
        // are dense, each part is sized by its id span, which holds every row it can have, and
        // the gap left by missing ids is closed after.
        let rowCount = Int(try db.integer("SELECT count(*) FROM sessions", "counting sessions") ?? 0)
        if !split { return (ranges, [rowCount]) }
        if span < Int64(rowCount + rowCount / 4) { return (ranges, ranges.map { Int($0.upperBound - $0.lowerBound) + 1 }) }
        var counts: [Int] = []
        for r in ranges {
            let n = try db.integer("SELECT count(*) FROM sessions WHERE id BETWEEN \(r.lowerBound) AND \(r.upperBound)",
                                   "counting sessions") ?? 0
            counts.append(Int(n))
        }
        return (ranges, counts)
    }

    /// Reads each range into its part of the array from `base`: the upper range on a helper
    /// thread, the lower one here; adds what each found to `found`. Returns how many sessions
    /// are initialized from `base` on, in one run; after a failure none are.
    private func readSessions(_ db: SQLiteConnection, _ loader: SessionLoader, _ ranges: [ClosedRange<Int64>],
                              _ counts: [Int], into base: UnsafeMutablePointer<SceneSession>,
                              _ found: inout [SessionLoader.Rows]) -> Result<Int, StoreError> {
        var helper: HelperThread<Result<SessionLoader.Rows, StoreError>>?
        if ranges.count == 2 {
            let upper = UncheckedPointer(base + counts[0])
            let (path, range, capacity) = (self.path, ranges[1], counts[1])
            let helperLoader = loader.withOwnStrings()
            helper = HelperThread { () -> Result<SessionLoader.Rows, StoreError> in
                Result { () throws(StoreError) in
                    try SceneStore.readOnHelperConnection(path: path, helperLoader, range, upper.pointer, capacity)
                }
            }
        }
        var own = Result { () throws(StoreError) in try loader.read(db, ids: ranges[0], into: base, capacity: counts[0]) }
        var upper: Result<SessionLoader.Rows, StoreError>?
        if let helper { upper = helper.join() }
        // A failure on either side: the other side's sessions are let go, nothing is kept.
        if case .failure(let e) = upper, case .success(let rows) = own {
            base.deinitialize(count: rows.written)
            own = .failure(e)
        }
        if case .failure = own, case .success(let rows) = upper {
            (base + counts[0]).deinitialize(count: rows.written)
            upper = nil
        }
        switch own {
        case .failure(let e):
            return .failure(e)
        case .success(let rows):
            found.append(rows)
            guard case .success(let more) = upper else { return .success(rows.written) }
            found.append(more)
            // Ids missing from the lower range, or its rows quarantined, leave a gap: the
            // upper part moves down, and the pages it leaves are given back.
            if rows.written < counts[0] {
                (base + rows.written).moveInitialize(from: base + counts[0], count: more.written)
                let stride = MemoryLayout<SceneSession>.stride
                HugePages.release(UnsafeMutableRawPointer(base + rows.written + more.written),
                                  bytes: (counts[0] - rows.written) * stride)
            }
            return .success(rows.written + more.written)
        }
    }

    /// The upper range's read, on the helper thread: a connection of its own, read-only.
    private static func readOnHelperConnection(path: String, _ loader: SessionLoader, _ range: ClosedRange<Int64>,
                                               _ buffer: UnsafeMutablePointer<SceneSession>, _ capacity: Int)
        throws(StoreError) -> SessionLoader.Rows {
        let db = try SQLiteConnection(path: path)
        defer { db.close() }
        try db.execute("""
            PRAGMA query_only = ON;
            PRAGMA cache_size = -\(Tuning.readerCacheKiB);
            PRAGMA cell_size_check = ON;
            PRAGMA trusted_schema = OFF;
            """, "configuring the second loading connection")
        return try loader.read(db, ids: range, into: buffer, capacity: capacity)
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
            let app = SessionLoader.app(ref: appRef, appsByRef, quarantinedApps, &check)
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
}
