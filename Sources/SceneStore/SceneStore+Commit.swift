import CSQLite
import SceneCore

extension SceneStore {
    /// Writes the batch as ONE transaction and returns once it is committed with the configured
    /// durability (`commitToLog`, then `syncLog`).
    public func commit(_ batch: StoreBatch) throws(StoreError) {
        try commitToLog(batch)
        try syncLog()
    }

    /// Writes the batch as ONE transaction and returns once COMMIT did: the batch is in the
    /// write-ahead log, which a crash of the process cannot undo; under Durability=full it is
    /// durable only after `syncLog`. On any failure the transaction is rolled back, nothing of
    /// the batch remains, the error names the file and the problem, and the store stays usable.
    public func commitToLog(_ batch: StoreBatch) throws(StoreError) {
        let (db, st) = try openConnection()
        let appsBefore = appsByRef.count
        let configurationsBefore = configurationsByRef.count
        try run(st.begin, db, "starting a transaction")
        do throws(StoreError) {
            let (range, written) = try write(batch, db, st)
            try run(st.commit, db, "committing")
            unrecordedQuarantine = []
            sequenceFloor = max(sequenceFloor, written.nextSequence)
            sessionFloor = max(sessionFloor, written.nextSessionNumber)
            taskFloor = max(taskFloor, written.nextTaskNumber)
            notificationFloor = max(notificationFloor, written.nextNotificationNumber)
            openFloor = max(openFloor, written.nextOpenNumber)
            if let range {
                if loggedOldest == nil { loggedOldest = range.lowerBound }
                loggedNewest = max(loggedNewest ?? 0, range.upperBound)
            }
            if let cutoff = pendingTrim {
                loggedOldest = max(loggedOldest ?? cutoff, cutoff)
                pendingTrim = nil
            }
        } catch {
            pendingTrim = nil
            // SQLITE_FULL and I/O errors may already have rolled the transaction back.
            if db.inTransaction {
                _ = st.rollback.step()
                st.rollback.reset()
            }
            forgetReferences(appsFrom: appsBefore, configurationsFrom: configurationsBefore)
            throw error
        }
    }

    /// The writes of one batch, inside the open transaction. Returns the range of sequence numbers
    /// logged and the high-water marks written (the clock aside).
    private func write(_ batch: StoreBatch, _ db: SQLiteConnection, _ st: Statements) throws(StoreError)
        -> (logged: ClosedRange<UInt64>?, counters: EngineCounters) {
        // Event-log rows found damaged since the last commit, copied before a trim can drop them.
        try record(unrecordedQuarantine, db)
        // Raised past every identifier the batch writes or removes.
        var next = batch.counters
        try writeApps(batch.apps, db, st, &next)
        try writeSessions(batch, db, st, &next)
        try writeTasks(batch, db, st, &next)
        try writeSchedules(batch, db, st)
        try writeNotifications(batch, db, st, &next)
        try writeRouting(batch, db, st, &next)
        let logged = try logEvents(batch.events, db, st, &next)
        try checkAllocations(next)
        let c = st.updateCounters
        c.bind(1, next.clock.microseconds)
        c.bind(2, next.nextSequence)
        c.bind(3, next.nextSessionNumber)
        c.bind(4, next.nextTaskNumber)
        c.bind(5, next.nextNotificationNumber)
        c.bind(6, next.nextOpenNumber)
        try run(c, db, "writing the counters")
        guard sqlite3_changes(db.handle) == 1 else { throw corrupt("the counters row is missing") }
        if let logged { try trimIfDue(logged, db, st) }
        return (logged, next)
    }

    /// Apps rows: a known one updated in place, a new one given a reference and inserted.
    private func writeApps(_ apps: [AppRecord], _ db: SQLiteConnection, _ st: Statements,
                           _ next: inout EngineCounters) throws(StoreError) {
        for app in apps {
            if let known = appRefs[app.id] {
                bind(app, ref: known, st.updateApp)
                try run(st.updateApp, db, "writing app \(app.id)")
                if sqlite3_changes(db.handle) == 0 {
                    // Not expected: a known reference was loaded with its row or written by a
                    // committed transaction. Written anyway, so the row is right regardless.
                    bind(app, ref: known, st.upsertApp)
                    try run(st.upsertApp, db, "writing app \(app.id)")
                }
            } else {
                let ref = newAppRef()
                try remember(app: app.id, ref: ref)
                bind(app, ref: ref, st.upsertApp)
                try run(st.upsertApp, db, "writing app \(app.id)")
            }
            for id in app.pendingDiscards { next.nextSessionNumber = max(next.nextSessionNumber, id.rawValue &+ 1) }
        }
    }

    /// Sessions rows written and deleted.
    private func writeSessions(_ batch: StoreBatch, _ db: SQLiteConnection, _ st: Statements,
                               _ next: inout EngineCounters) throws(StoreError) {
        for session in batch.sessions {
            let update = st.updateSession
            try bind(session, update, db, st)
            try run(update, db, "writing session \(session.id)")
            if sqlite3_changes(db.handle) == 0 {
                // Not stored yet: inserted (the upsert, so that a row that exists after all is
                // still written, never duplicated).
                try bind(session, st.upsertSession, db, st)
                try run(st.upsertSession, db, "writing session \(session.id)")
            }
            next.nextSessionNumber = max(next.nextSessionNumber, session.id.rawValue &+ 1)
        }
        for id in batch.removedSessions {
            st.deleteSession.bind(1, id.rawValue)
            try run(st.deleteSession, db, "deleting session \(id)")
            next.nextSessionNumber = max(next.nextSessionNumber, id.rawValue &+ 1)
        }
    }

    /// Tasks rows written and deleted.
    private func writeTasks(_ batch: StoreBatch, _ db: SQLiteConnection, _ st: Statements,
                            _ next: inout EngineCounters) throws(StoreError) {
        for task in batch.tasks {
            let s = st.upsertTask
            s.bind(1, task.token.rawValue)
            s.bind(2, try ref(of: task.app, "task \(task.token)"))
            if let session = task.session { s.bind(3, session.rawValue) } else { s.bindNull(3) }
            s.bind(4, text: task.name)
            s.bind(5, task.beganAt.microseconds)
            s.bind(6, task.expirationSentAt)
            try run(s, db, "writing task \(task.token)")
            next.nextTaskNumber = max(next.nextTaskNumber, task.token.rawValue &+ 1)
        }
        for token in batch.removedTasks {
            st.deleteTask.bind(1, token.rawValue)
            try run(st.deleteTask, db, "deleting task \(token)")
            next.nextTaskNumber = max(next.nextTaskNumber, token.rawValue &+ 1)
        }
    }

    /// The events, checked for new sequence numbers and appended to the log if it keeps any.
    /// Returns the range of sequence numbers logged.
    private func logEvents(_ events: [LifecycleEvent], _ db: SQLiteConnection, _ st: Statements,
                           _ next: inout EngineCounters) throws(StoreError) -> ClosedRange<UInt64>? {
        var floor = sequenceFloor
        for event in events {
            // Numbers only go up, across the batch and across commits, even once the log has
            // been trimmed past them.
            guard event.seq >= floor else {
                throw StoreError(kind: .constraint, path: path,
                                 message: "event #\(event.seq) reuses a sequence number (the next free one is #\(floor))")
            }
            floor = event.seq &+ 1
            next.nextSequence = max(next.nextSequence, event.seq &+ 1)
        }
        // Strictly increasing (checked above), so the batch's first and last bound what it logs.
        guard eventLogCapacity > 0, let first = events.first, let last = events.last else { return nil }
        try log(events, db, st)
        return first.seq...last.seq
    }

    /// What bounds the allocations of a transaction a damaged log may lose (SceneStore+Recovery).
    private func checkAllocations(_ counters: EngineCounters) throws(StoreError) {
        let marks = [("session ids", counters.nextSessionNumber, sessionFloor, Tuning.maxAllocationsPerCommit),
                     ("task tokens", counters.nextTaskNumber, taskFloor, Tuning.maxTaskTokensPerCommit),
                     ("sequence numbers", counters.nextSequence, sequenceFloor, Tuning.maxAllocationsPerCommit),
                     ("notification ids", counters.nextNotificationNumber, notificationFloor,
                      Tuning.maxNotificationsPerCommit),
                     ("open ids", counters.nextOpenNumber, openFloor, Tuning.maxOpensPerCommit)]
        for (kind, next, floor, cap) in marks
        where next > floor && next - floor > cap || next >= Tuning.storedNumberLimit {
            throw StoreError(kind: .constraint, path: path,
                             message: "the batch would take \(kind) up to \(next), \(next &- floor) past the last "
                                 + "committed; one commit may allocate at most \(cap)")
        }
    }

    /// Binds parameters ?1 to ?10 of `updateApp` (which leaves ?2, the id, unused) or `upsertApp`.
    private func bind(_ app: AppRecord, ref: Int64, _ s: Statement) {
        s.bind(1, ref)
        s.bind(2, text: app.id.rawValue)
        s.bind(3, StorageCodes.code(app.process))
        if let blob = RowCoding.pendingDiscards(app.pendingDiscards) { s.bind(4, blob: blob) } else { s.bindNull(4) }
        s.bind(5, app.idleSince)
        s.bind(6, app.backgroundEnteredAt)
        s.bind(7, app.launchedAt)
        s.bind(8, app.launches)
        s.bind(9, app.baseFootprint)
        s.bind(10, StorageCodes.code(app.activeModes))
    }

    /// Binds parameters ?1 to ?22 of `updateSession` or `upsertSession`.
    private func bind(_ session: SceneSession, _ s: Statement, _ db: SQLiteConnection, _ st: Statements) throws(StoreError) {
        s.bind(1, session.id.rawValue)
        s.bind(2, try ref(of: session.app, "session \(session.id)"))
        s.bind(3, StorageCodes.code(session.role))
        s.bind(4, try configurationRef(session.configurationName, db, st))
        // A payload only in the store is left as the row has it; the placeholder bound
        // instead is never written over it.
        switch session.savedUserInfo {
        case .held(let info): s.bind(5, text: info.json)
        case .stored: s.bind(5, text: UserInfo.empty.json)
        }
        switch session.savedRestoration {
        case .held(nil), .stored: s.bindNull(6)
        case .held(.json(let text)?): s.bind(6, text: text)
        case .held(.bytes(let bytes)?): s.bind(6, blob: bytes)
        }
        s.bind(19, UInt64(session.savedUserInfo.byteCount))
        s.bind(20, UInt64(session.savedRestoration.byteCount))
        s.bind(21, session.savedUserInfo.isStored)
        s.bind(22, session.savedRestoration.isStored)
        s.bind(7, session.footprint)
        s.bind(8, StorageCodes.code(session.condition))
        s.bind(9, StorageCodes.code(session.sceneState))
        s.bind(10, session.sceneInstance)
        s.bind(11, session.createdAt.microseconds)
        s.bind(12, session.lastActiveAt.microseconds)
        s.bind(13, session.backgroundSince.microseconds)
        s.bind(14, session.activations)
        s.bind(15, session.restores)
        s.bind(16, session.restoreCostMs)
        s.bind(17, session.isProtected)
        s.bind(18, session.activationScore)
    }

    /// Appends the events to the log: `eventsPerInsert` rows a statement, the rest one by one.
    private func log(_ events: [LifecycleEvent], _ db: SQLiteConnection, _ st: Statements) throws(StoreError) {
        let chunk = Statements.eventsPerInsert
        var i = 0
        while events.count - i >= chunk {
            for row in 0..<chunk { try bind(events[i + row], st.insertEvents, first: Int32(row * Statements.eventFields)) }
            try run(st.insertEvents, db, "logging events #\(events[i].seq) to #\(events[i + chunk - 1].seq)")
            i += chunk
        }
        while i < events.count {
            try bind(events[i], st.insertEvent, first: 0)
            try run(st.insertEvent, db, "logging event #\(events[i].seq)")
            i += 1
        }
    }

    /// Binds one event's columns to parameters `first + 1` to `first + eventFields`.
    @inline(__always)
    private func bind(_ event: LifecycleEvent, _ s: Statement, first p: Int32) throws(StoreError) {
        s.bind(p + 1, event.seq)
        s.bind(p + 2, event.time.microseconds)
        s.bind(p + 3, StorageCodes.code(event.name))
        s.bind(p + 4, try ref(of: event.app, "event #\(event.seq)"))
        if let session = event.session { s.bind(p + 5, session.rawValue) } else { s.bindNull(p + 5) }
        s.bind(p + 6, event.sceneInstance)
        s.bind(p + 7, StorageCodes.code(event.state))
        s.bind(p + 8, StorageCodes.code(event.appState))
        s.bind(p + 9, RowCoding.causeCode(event.cause))
        if let extra = RowCoding.extra(detail: event.detail, cause: event.cause) {
            s.bind(p + 10, blob: extra)
        } else {
            s.bindNull(p + 10)
        }
    }

    /// Deletes the events older than the capacity allows, once they exceed it by the slack: one
    /// range delete on the rowid every so often instead of a few rows at every commit.
    private func trimIfDue(_ logged: ClosedRange<UInt64>, _ db: SQLiteConnection, _ st: Statements) throws(StoreError) {
        let oldest = min(loggedOldest ?? logged.lowerBound, logged.lowerBound)
        let newest = max(loggedNewest ?? 0, logged.upperBound)
        let capacity = UInt64(eventLogCapacity)
        guard newest >= oldest, newest - oldest + 1 > capacity + UInt64(Tuning.trimSlack(capacity: eventLogCapacity))
        else { return }
        // Never a row of this batch: every sequence number a commit hands out stays a row of it
        // until a later commit, which is what bounds a damaged log's losses (SceneStore+Recovery).
        let cutoff = min(newest - capacity + 1, logged.lowerBound)
        st.trimEvents.bind(1, cutoff)
        try run(st.trimEvents, db, "trimming the event log")
        pendingTrim = cutoff
    }

    func ref(of app: AppID, _ owner: @autoclosure () -> String) throws(StoreError) -> Int64 {
        guard let ref = appRefs[app] else {
            throw StoreError(kind: .misuse, path: path,
                             message: "\(owner()) names app \(app), which is neither stored nor in the batch")
        }
        return ref
    }

    private func configurationRef(_ name: String, _ db: SQLiteConnection, _ st: Statements) throws(StoreError) -> Int64 {
        if let ref = configurationRefs[name] { return ref }
        let ref = newConfigurationRef()
        st.insertConfiguration.bind(1, ref)
        st.insertConfiguration.bind(2, text: name)
        try run(st.insertConfiguration, db, "writing configuration name \"\(name)\"")
        try remember(configuration: name, ref: ref)
        return ref
    }

    /// Undoes the references a rolled-back transaction had assigned.
    private func forgetReferences(appsFrom: Int, configurationsFrom: Int) {
        while appsByRef.count > appsFrom {
            if let app = appsByRef.removeLast() { appRefs[app] = nil }
        }
        while configurationsByRef.count > configurationsFrom {
            if let name = configurationsByRef.removeLast() { configurationRefs[name] = nil }
        }
    }

    /// Steps a statement that returns no rows and resets it.
    @inline(__always)
    func run(_ s: Statement, _ db: SQLiteConnection, _ context: @autoclosure () -> String) throws(StoreError) {
        let rc = s.step()
        guard rc == SQLITE_DONE else {
            let error = db.error(rc, context())
            s.reset()
            throw error
        }
        s.reset()
    }
}
