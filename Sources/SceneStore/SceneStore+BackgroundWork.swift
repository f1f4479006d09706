import CSQLite
import SceneCore

/// Scheduled tasks and pending notifications (R34): written with each commit, read and checked
/// at load.
extension SceneStore {
    /// Schedules rows written and deleted (deleted after, so one both upserted and removed in
    /// the batch ends removed).
    func writeSchedules(_ batch: StoreBatch, _ db: SQLiteConnection, _ st: Statements) throws(StoreError) {
        for task in batch.schedules {
            let s = st.upsertSchedule
            s.bind(1, try ref(of: task.app, "scheduled task \(task.identifier)"))
            s.bind(2, text: task.identifier)
            s.bind(3, StorageCodes.code(task.kind))
            s.bind(4, task.earliestBegin.microseconds)
            s.bind(5, task.submittedAt.microseconds)
            try run(s, db, "writing scheduled task \(task.identifier) of \(task.app)")
        }
        for key in batch.removedSchedules {
            // An app never stored has no rows to delete.
            guard let app = appRefs[key.app] else { continue }
            st.deleteSchedule.bind(1, app)
            st.deleteSchedule.bind(2, text: key.identifier)
            try run(st.deleteSchedule, db, "deleting scheduled task \(key.identifier) of \(key.app)")
        }
    }

    /// Notifications rows written and deleted.
    func writeNotifications(_ batch: StoreBatch, _ db: SQLiteConnection, _ st: Statements,
                            _ next: inout EngineCounters) throws(StoreError) {
        for n in batch.notifications {
            let s = st.upsertNotification
            s.bind(1, n.id.rawValue)
            s.bind(2, try ref(of: n.app, "notification \(n.id)"))
            s.bind(3, StorageCodes.code(n.priority))
            s.bind(4, n.queuedAt.microseconds)
            s.bind(5, text: n.payload)
            try run(s, db, "writing notification \(n.id)")
            next.nextNotificationNumber = max(next.nextNotificationNumber, n.id.rawValue &+ 1)
        }
        for id in batch.removedNotifications {
            st.deleteNotification.bind(1, id.rawValue)
            try run(st.deleteNotification, db, "deleting notification \(id)")
            next.nextNotificationNumber = max(next.nextNotificationNumber, id.rawValue &+ 1)
        }
    }
}

extension SceneStore {
    /// The schedules rows that check out, in app and identifier order. One whose app is not
    /// loaded goes with it.
    func loadSchedules(_ db: SQLiteConnection, quarantinedApps: Set<Int64>,
                       _ quarantined: inout [QuarantinedRow]) throws(StoreError) -> [ScheduledTask] {
        let s = try db.prepare("""
            SELECT id, app, identifier, kind, earliest_begin, submitted_at FROM schedules ORDER BY id
            """, persistent: false, "loading scheduled tasks")
        defer { s.finalize() }
        var schedules: [ScheduledTask] = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading scheduled tasks") }
            let key = s.int64(0)
            var check = RowCheck(s)
            let app = SessionLoader.app(ref: check.integer(1, "app"), appsByRef, quarantinedApps, &check)
            let identifier = check.text(2, "identifier")
            if check.isValid && !Self.isScheduleIdentifier(identifier) {
                check.fail("identifier \(RowCheck.excerpt(s.textBytes(2))) is not 1 to 255 bytes")
            }
            let code = check.integer(3, "kind")
            let kind = StorageCodes.wakeKind(code)
            if check.isValid && kind != .refresh && kind != .processing {
                check.fail("kind \(code) is not a scheduled task's (refresh or processing)")
            }
            let earliestBegin = check.timestamp(4, "earliest_begin")
            let submittedAt = check.timestamp(5, "submitted_at")
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .schedules, key: key, reason: problem))
                continue
            }
            schedules.append(ScheduledTask(app: app!, identifier: identifier, kind: kind!, earliestBegin: earliestBegin,
                                           submittedAt: submittedAt))
        }
        return schedules.sorted { $0.key < $1.key }
    }

    /// What ScheduleBackgroundTask accepts.
    static func isScheduleIdentifier(_ identifier: String) -> Bool {
        !identifier.isEmpty && identifier.utf8.count <= 255
    }

    /// The notifications rows that check out, in id order; `floor` is raised past every id
    /// found, quarantined rows included.
    func loadNotifications(_ db: SQLiteConnection, quarantinedApps: Set<Int64>, _ quarantined: inout [QuarantinedRow],
                           floor: inout UInt64) throws(StoreError) -> [PendingNotification] {
        let s = try db.prepare("""
            SELECT id, app, priority, queued_at, payload FROM notifications ORDER BY id
            """, persistent: false, "loading notifications")
        defer { s.finalize() }
        var notifications: [PendingNotification] = []
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading notifications") }
            let key = s.int64(0)
            var check = RowCheck(s)
            if RowCheck.isStoredNumber(key) {
                floor = max(floor, UInt64(key) + 1)
            } else {
                check.fail("id \(key) is no notification id")
            }
            let app = SessionLoader.app(ref: check.integer(1, "app"), appsByRef, quarantinedApps, &check)
            let code = check.integer(2, "priority")
            let priority = StorageCodes.notificationPriority(code)
            if check.isValid && priority == nil { check.fail("priority \(code) is not one") }
            let queuedAt = check.timestamp(3, "queued_at")
            let payload = check.jsonObject(4, "payload")
            if let problem = check.problem {
                quarantined.append(QuarantinedRow(table: .notifications, key: key, reason: problem))
                continue
            }
            notifications.append(PendingNotification(id: NotificationID(UInt64(key)), app: app!, payload: payload,
                                                     priority: priority!, queuedAt: queuedAt))
        }
        return notifications
    }
}
