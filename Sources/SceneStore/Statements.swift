import CSQLite

/// Every statement a commit or a log read uses, prepared once (SQLITE_PREPARE_PERSISTENT) and
/// reset after each use. load() prepares its own, as it runs once per start.
struct Statements {
    let begin: Statement
    let commit: Statement
    let rollback: Statement
    let upsertApp: Statement
    let updateApp: Statement
    let insertConfiguration: Statement
    let upsertSession: Statement
    let updateSession: Statement
    let deleteSession: Statement
    let upsertTask: Statement
    let deleteTask: Statement
    let upsertSchedule: Statement
    let deleteSchedule: Statement
    let upsertNotification: Statement
    let deleteNotification: Statement
    let upsertOpen: Statement
    let deleteOpen: Statement
    let upsertConditions: Statement
    let deleteConditions: Statement
    let insertEvent: Statement
    /// `eventsPerInsert` rows in one statement: most of a busy batch's rows are events, and one
    /// step per row made the statement overhead a large part of a commit.
    let insertEvents: Statement
    let updateCounters: Statement
    let trimEvents: Statement
    let selectEvents: Statement

    init(_ db: SQLiteConnection) throws(StoreError) {
        var made: [Statement] = []
        func prepare(_ sql: String) throws(StoreError) -> Statement {
            do throws(StoreError) {
                let s = try db.prepare(sql, "preparing statements")
                made.append(s)
                return s
            } catch {
                for s in made { s.finalize() }
                throw error
            }
        }
        begin = try prepare(SQL.begin)
        commit = try prepare(SQL.commit)
        rollback = try prepare(SQL.rollback)
        upsertApp = try prepare(SQL.upsertApp)
        updateApp = try prepare(SQL.updateApp)
        insertConfiguration = try prepare(SQL.insertConfiguration)
        upsertSession = try prepare(SQL.upsertSession)
        updateSession = try prepare(SQL.updateSession)
        deleteSession = try prepare(SQL.deleteSession)
        upsertTask = try prepare(SQL.upsertTask)
        deleteTask = try prepare(SQL.deleteTask)
        upsertSchedule = try prepare(SQL.upsertSchedule)
        deleteSchedule = try prepare(SQL.deleteSchedule)
        upsertNotification = try prepare(SQL.upsertNotification)
        deleteNotification = try prepare(SQL.deleteNotification)
        upsertOpen = try prepare(SQL.upsertOpen)
        deleteOpen = try prepare(SQL.deleteOpen)
        upsertConditions = try prepare(SQL.upsertConditions)
        deleteConditions = try prepare(SQL.deleteConditions)
        insertEvent = try prepare(SQL.insertEvent)
        insertEvents = try prepare(SQL.insertEvents)
        updateCounters = try prepare(SQL.updateCounters)
        trimEvents = try prepare(SQL.trimEvents)
        selectEvents = try prepare(SQL.selectEvents)
    }

    /// The events table's columns, in the order `SceneStore`'s `bind(_:_:first:)` binds an event.
    static let eventColumns = "seq, time, name, app, session, scene_instance, state, app_state, cause, extra"
    static let eventFields = 10
    static let eventsPerInsert = 16

    /// The statements' text, one per row operation.
    enum SQL {
        static let begin = "BEGIN IMMEDIATE"
        static let commit = "COMMIT"
        static let rollback = "ROLLBACK"
        static let upsertApp = """
            INSERT INTO apps (ref, id, process, pending_discards, idle_since, background_entered_at, launched_at,
                              launches, base_footprint, active_modes)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
            ON CONFLICT (ref) DO UPDATE SET
                process = excluded.process, pending_discards = excluded.pending_discards,
                idle_since = excluded.idle_since, background_entered_at = excluded.background_entered_at,
                launched_at = excluded.launched_at, launches = excluded.launches,
                base_footprint = excluded.base_footprint, active_modes = excluded.active_modes
            """
        // As for sessions: an app already stored is updated in place (its id, and so the index
        // on it, unchanged); the upsert only for a new one.
        static let updateApp = """
            UPDATE apps SET process = ?3, pending_discards = ?4, idle_since = ?5, background_entered_at = ?6,
                            launched_at = ?7, launches = ?8, base_footprint = ?9, active_modes = ?10
            WHERE ref = ?1
            """
        static let insertConfiguration = "INSERT INTO configurations (ref, name) VALUES (?1, ?2)"
        // ?21 and ?22: the session's userInfo or restoration data is only in the store (not held
        // by the engine), so the row keeps its own; a change of state then rewrites no payload.
        static let upsertSession = """
            INSERT INTO sessions (id, app, role, configuration, user_info, restoration, footprint, condition,
                                  scene_state, scene_instance, created_at, last_active_at, background_since,
                                  activations, restores, restore_cost_ms, protected, activation_score,
                                  user_info_size, restoration_size)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)
            ON CONFLICT (id) DO UPDATE SET
                app = excluded.app, role = excluded.role, configuration = excluded.configuration,
                user_info = CASE WHEN ?21 THEN user_info ELSE excluded.user_info END,
                restoration = CASE WHEN ?22 THEN restoration ELSE excluded.restoration END,
                user_info_size = excluded.user_info_size, restoration_size = excluded.restoration_size,
                footprint = excluded.footprint,
                condition = excluded.condition, scene_state = excluded.scene_state,
                scene_instance = excluded.scene_instance, created_at = excluded.created_at,
                last_active_at = excluded.last_active_at, background_since = excluded.background_since,
                activations = excluded.activations, restores = excluded.restores,
                restore_cost_ms = excluded.restore_cost_ms, protected = excluded.protected,
                activation_score = excluded.activation_score
            """
        // Most writes are to sessions already stored: one UPDATE (one seek, one record) first,
        // the upsert above only when it changed nothing; the upsert alone evaluates the row twice.
        static let updateSession = """
            UPDATE sessions SET
                app = ?2, role = ?3, configuration = ?4,
                user_info = CASE WHEN ?21 THEN user_info ELSE ?5 END,
                restoration = CASE WHEN ?22 THEN restoration ELSE ?6 END,
                footprint = ?7, condition = ?8, scene_state = ?9, scene_instance = ?10, created_at = ?11,
                last_active_at = ?12, background_since = ?13, activations = ?14, restores = ?15,
                restore_cost_ms = ?16, protected = ?17, activation_score = ?18,
                user_info_size = ?19, restoration_size = ?20
            WHERE id = ?1
            """
        static let deleteSession = "DELETE FROM sessions WHERE id = ?1"
        static let upsertTask = """
            INSERT INTO tasks (token, app, session, name, began_at, expiration_sent_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (token) DO UPDATE SET
                app = excluded.app, session = excluded.session, name = excluded.name,
                began_at = excluded.began_at, expiration_sent_at = excluded.expiration_sent_at
            """
        static let deleteTask = "DELETE FROM tasks WHERE token = ?1"
        // The row keeps its id when the app submits the identifier again.
        static let upsertSchedule = """
            INSERT INTO schedules (app, identifier, kind, earliest_begin, submitted_at)
            VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (app, identifier) DO UPDATE SET
                kind = excluded.kind, earliest_begin = excluded.earliest_begin, submitted_at = excluded.submitted_at
            """
        static let deleteSchedule = "DELETE FROM schedules WHERE app = ?1 AND identifier = ?2"
        static let upsertNotification = """
            INSERT INTO notifications (id, app, priority, queued_at, payload)
            VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (id) DO UPDATE SET
                app = excluded.app, priority = excluded.priority, queued_at = excluded.queued_at,
                payload = excluded.payload
            """
        static let deleteNotification = "DELETE FROM notifications WHERE id = ?1"
        static let upsertOpen = """
            INSERT INTO opens (id, app, session, activate, role, queued_at, configuration, payload)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (id) DO UPDATE SET
                app = excluded.app, session = excluded.session, activate = excluded.activate, role = excluded.role,
                queued_at = excluded.queued_at, configuration = excluded.configuration, payload = excluded.payload
            """
        static let deleteOpen = "DELETE FROM opens WHERE id = ?1"
        static let upsertConditions = """
            INSERT INTO activation_conditions (session, can_activate_for, prefers_to_activate_for)
            VALUES (?1, ?2, ?3)
            ON CONFLICT (session) DO UPDATE SET
                can_activate_for = excluded.can_activate_for, prefers_to_activate_for = excluded.prefers_to_activate_for
            """
        static let deleteConditions = "DELETE FROM activation_conditions WHERE session = ?1"
        static let insertEvent = """
            INSERT INTO events (\(Statements.eventColumns))
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
            """
        static let insertEvents = "INSERT INTO events (\(Statements.eventColumns)) VALUES "
            + (0..<Statements.eventsPerInsert).map { row in
                "(" + (1...Statements.eventFields).map { "?\(row * Statements.eventFields + $0)" }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
        // High-water marks only move forward, whatever a caller passes.
        static let updateCounters = """
            UPDATE counters SET clock = max(clock, ?1), next_sequence = max(next_sequence, ?2),
                                next_session = max(next_session, ?3), next_task = max(next_task, ?4),
                                next_notification = max(next_notification, ?5), next_open = max(next_open, ?6)
            WHERE id = 1
            """
        static let trimEvents = "DELETE FROM events WHERE seq < ?1"
        static let selectEvents = """
            SELECT seq, time, name, app, session, scene_instance, state, app_state, cause, extra
            FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2
            """
    }

    func finalize() {
        for s in [begin, commit, rollback, upsertApp, updateApp, insertConfiguration, upsertSession, updateSession, deleteSession,
                  upsertTask, deleteTask, upsertSchedule, deleteSchedule, upsertNotification, deleteNotification,
                  upsertOpen, deleteOpen, upsertConditions, deleteConditions,
                  insertEvent, insertEvents, updateCounters, trimEvents, selectEvents] {
            s.finalize()
        }
    }
}
