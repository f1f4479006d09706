/// The database layout, its version history and the forward migrations.
///
/// The version lives in the header's `user_version`; `application_id` marks the file as scened's.
/// `migrations[i]` takes a database from version i to i + 1 (version 0 is an empty file). All
/// pending migrations run in one transaction, so an interrupted upgrade leaves the old version
/// intact. A migration, once released, is never edited: fix forward with a new one.
enum Schema {
    /// "SCND".
    static let applicationID: Int32 = 0x5343_4E44

    static var currentVersion: Int { migrations.count }

    static let migrations: [String] = [version1, version2, version3, version4, version5, version6]

    /// Version 1, the first layout: apps keyed by their text identifier, and every session, task
    /// and event repeating its app's identifier and (sessions) its configuration name as text.
    static let version1 = """
        CREATE TABLE apps (
            id TEXT PRIMARY KEY NOT NULL,
            process INTEGER NOT NULL,
            pending_discards BLOB,
            idle_since INTEGER,
            background_entered_at INTEGER,
            launched_at INTEGER,
            launches INTEGER NOT NULL,
            base_footprint INTEGER NOT NULL
        );
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            app TEXT NOT NULL,
            role INTEGER NOT NULL,
            configuration TEXT NOT NULL,
            user_info TEXT NOT NULL,
            restoration BLOB,
            footprint INTEGER NOT NULL,
            condition INTEGER NOT NULL CHECK (condition IN (0, 1)),
            scene_state INTEGER NOT NULL,
            scene_instance INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            last_active_at INTEGER NOT NULL,
            background_since INTEGER NOT NULL,
            activations INTEGER NOT NULL,
            restores INTEGER NOT NULL,
            restore_cost_ms INTEGER NOT NULL,
            protected INTEGER NOT NULL
        );
        CREATE TABLE tasks (
            token INTEGER PRIMARY KEY,
            app TEXT NOT NULL,
            session INTEGER,
            name TEXT NOT NULL,
            began_at INTEGER NOT NULL,
            expiration_sent_at INTEGER
        );
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY,
            time INTEGER NOT NULL,
            name INTEGER NOT NULL,
            app TEXT NOT NULL,
            session INTEGER,
            scene_instance INTEGER NOT NULL,
            state INTEGER NOT NULL,
            app_state INTEGER NOT NULL,
            cause INTEGER NOT NULL,
            extra BLOB
        );
        CREATE TABLE counters (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            clock INTEGER NOT NULL,
            next_sequence INTEGER NOT NULL,
            next_session INTEGER NOT NULL,
            next_task INTEGER NOT NULL
        );
        INSERT INTO counters VALUES (1, 0, 1, 1, 1);
        PRAGMA application_id = \(applicationID);
        """

    /// Version 2: app identifiers and configuration names are stored once and referred to by
    /// small integers. Found while measuring load(): a session row of v1 repeats ~20 bytes of app
    /// id and ~21 of "Default Configuration" (a third of a typical row), and load() had to decode
    /// and hash both strings for every row to intern them. With references, rows shrink, load()
    /// interns by array index, and events shed their app id too.
    ///
    /// Also adds `sessions.activation_score` (SceneSession.activationScore, the decayed activation
    /// count reclaim weighs), 0 for sessions written by v1, as SceneCore starts it. NULL stands for
    /// NaN, which SQLite cannot store as a REAL.
    ///
    /// Rebuilds sessions, tasks and events (SQLite cannot change a column's type in place). An
    /// app named by a row but missing from `apps` (never written by scened) gets a not-running
    /// record rather than losing the row.
    static let version2 = """
        CREATE TABLE apps_v2 (
            ref INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            process INTEGER NOT NULL,
            pending_discards BLOB,
            idle_since INTEGER,
            background_entered_at INTEGER,
            launched_at INTEGER,
            launches INTEGER NOT NULL,
            base_footprint INTEGER NOT NULL
        );
        INSERT INTO apps_v2 (id, process, pending_discards, idle_since, background_entered_at, launched_at,
                             launches, base_footprint)
            SELECT id, process, pending_discards, idle_since, background_entered_at, launched_at, launches,
                   base_footprint
            FROM apps ORDER BY id;
        INSERT OR IGNORE INTO apps_v2 (id, process, launches, base_footprint)
            SELECT app, 0, 0, 0 FROM (SELECT app FROM sessions UNION SELECT app FROM tasks
                                      UNION SELECT app FROM events) ORDER BY app;

        CREATE TABLE configurations (
            ref INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE
        );
        INSERT INTO configurations (name) SELECT DISTINCT configuration FROM sessions ORDER BY configuration;

        CREATE TABLE sessions_v2 (
            id INTEGER PRIMARY KEY,
            app INTEGER NOT NULL,
            role INTEGER NOT NULL,
            configuration INTEGER NOT NULL,
            user_info TEXT NOT NULL,
            restoration BLOB,
            footprint INTEGER NOT NULL,
            condition INTEGER NOT NULL CHECK (condition IN (0, 1)),
            scene_state INTEGER NOT NULL,
            scene_instance INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            last_active_at INTEGER NOT NULL,
            background_since INTEGER NOT NULL,
            activations INTEGER NOT NULL,
            restores INTEGER NOT NULL,
            restore_cost_ms INTEGER NOT NULL,
            protected INTEGER NOT NULL,
            activation_score REAL
        );
        INSERT INTO sessions_v2
            SELECT s.id, a.ref, s.role, c.ref, s.user_info, s.restoration, s.footprint, s.condition,
                   s.scene_state, s.scene_instance, s.created_at, s.last_active_at, s.background_since,
                   s.activations, s.restores, s.restore_cost_ms, s.protected, 0.0
            FROM sessions s JOIN apps_v2 a ON a.id = s.app JOIN configurations c ON c.name = s.configuration
            ORDER BY s.id;
        DROP TABLE sessions;
        ALTER TABLE sessions_v2 RENAME TO sessions;

        CREATE TABLE tasks_v2 (
            token INTEGER PRIMARY KEY,
            app INTEGER NOT NULL,
            session INTEGER,
            name TEXT NOT NULL,
            began_at INTEGER NOT NULL,
            expiration_sent_at INTEGER
        );
        INSERT INTO tasks_v2
            SELECT t.token, a.ref, t.session, t.name, t.began_at, t.expiration_sent_at
            FROM tasks t JOIN apps_v2 a ON a.id = t.app ORDER BY t.token;
        DROP TABLE tasks;
        ALTER TABLE tasks_v2 RENAME TO tasks;

        CREATE TABLE events_v2 (
            seq INTEGER PRIMARY KEY,
            time INTEGER NOT NULL,
            name INTEGER NOT NULL,
            app INTEGER NOT NULL,
            session INTEGER,
            scene_instance INTEGER NOT NULL,
            state INTEGER NOT NULL,
            app_state INTEGER NOT NULL,
            cause INTEGER NOT NULL,
            extra BLOB
        );
        INSERT INTO events_v2
            SELECT e.seq, e.time, e.name, a.ref, e.session, e.scene_instance, e.state, e.app_state, e.cause, e.extra
            FROM events e JOIN apps_v2 a ON a.id = e.app ORDER BY e.seq;
        DROP TABLE events;
        ALTER TABLE events_v2 RENAME TO events;

        DROP TABLE apps;
        ALTER TABLE apps_v2 RENAME TO apps;
        """

    /// Version 3: the quarantine, a record of stored rows found damaged at load (or when the
    /// event log is read). The rows themselves stay where they are and are not served; this
    /// says which (table and key), why, since when, and keeps a copy of the row's values
    /// (SQL literals, as quote() writes them), because an app's row is written over once a
    /// client uses that app again.
    static let version3 = """
        CREATE TABLE quarantine (
            table_name TEXT NOT NULL,
            row_key INTEGER NOT NULL,
            reason TEXT NOT NULL,
            detected_at INTEGER NOT NULL,
            evidence TEXT NOT NULL,
            PRIMARY KEY (table_name, row_key)
        );
        """

    /// Version 4: each session's userInfo and restoration sizes, in bytes, and the payloads
    /// moved to the end of the row. The daemon leaves large payloads in the store and loads only
    /// their sizes, which listings report (SQLite's length() of text counts characters and reads
    /// the whole value, so the sizes are kept beside the payloads). A record's values are stored
    /// in column order, and a 16 KiB payload spills into overflow pages: any column after it can
    /// only be reached by reading that chain, so every fixed-size column comes first.
    static let version4 = """
        CREATE TABLE sessions_v4 (
            id INTEGER PRIMARY KEY,
            app INTEGER NOT NULL,
            role INTEGER NOT NULL,
            configuration INTEGER NOT NULL,
            footprint INTEGER NOT NULL,
            condition INTEGER NOT NULL CHECK (condition IN (0, 1)),
            scene_state INTEGER NOT NULL,
            scene_instance INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            last_active_at INTEGER NOT NULL,
            background_since INTEGER NOT NULL,
            activations INTEGER NOT NULL,
            restores INTEGER NOT NULL,
            restore_cost_ms INTEGER NOT NULL,
            protected INTEGER NOT NULL,
            activation_score REAL,
            user_info_size INTEGER NOT NULL,
            restoration_size INTEGER NOT NULL,
            user_info TEXT NOT NULL,
            restoration BLOB
        );
        INSERT INTO sessions_v4
            SELECT id, app, role, configuration, footprint, condition, scene_state, scene_instance, created_at,
                   last_active_at, background_since, activations, restores, restore_cost_ms, protected,
                   activation_score, coalesce(length(CAST(user_info AS BLOB)), 0),
                   coalesce(length(CAST(restoration AS BLOB)), 0), user_info, restoration
            FROM sessions ORDER BY id;
        DROP TABLE sessions;
        ALTER TABLE sessions_v4 RENAME TO sessions;
        """

    /// Version 5: background work (R34). Scheduled tasks, one per app and identifier, and
    /// notifications waiting for their app, each kept until a wake delivers it (the delivery's
    /// event and the row's removal are one commit: exactly once); the background modes an app
    /// declares active; the notification id high-water mark. Rows of earlier versions keep
    /// everything: no app has modes active, no notification was ever handed out.
    ///
    /// A schedule has a key of its own: the quarantine names rows by rowid, and an explicit
    /// INTEGER PRIMARY KEY is one a VACUUM never renumbers. Payloads come last, as in version 4.
    static let version5 = """
        ALTER TABLE apps ADD COLUMN active_modes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE counters ADD COLUMN next_notification INTEGER NOT NULL DEFAULT 1;
        CREATE TABLE schedules (
            id INTEGER PRIMARY KEY,
            app INTEGER NOT NULL,
            identifier TEXT NOT NULL,
            kind INTEGER NOT NULL,
            earliest_begin INTEGER NOT NULL,
            submitted_at INTEGER NOT NULL,
            UNIQUE (app, identifier)
        );
        CREATE TABLE notifications (
            id INTEGER PRIMARY KEY,
            app INTEGER NOT NULL,
            priority INTEGER NOT NULL,
            queued_at INTEGER NOT NULL,
            payload TEXT NOT NULL
        );
        """

    /// Version 6: routing. Opens accepted for an app that is not running, each kept until the
    /// launch that delivers it (the delivery's events and the row's removal are one commit:
    /// exactly once, as for notifications); the activation conditions of connected scenes
    /// (UIKit's defaults are no row); the open id high-water mark. Rows of earlier versions
    /// keep everything: no Open was ever stored, every scene has the defaults.
    ///
    /// Payloads (RoutingCoding) and pattern lists (RowCoding) are blobs, last in their rows.
    /// `can_activate_for` NULL is UIKit's "any".
    static let version6 = """
        ALTER TABLE counters ADD COLUMN next_open INTEGER NOT NULL DEFAULT 1;
        CREATE TABLE opens (
            id INTEGER PRIMARY KEY,
            app INTEGER NOT NULL,
            session INTEGER,
            activate INTEGER NOT NULL,
            role INTEGER NOT NULL,
            queued_at INTEGER NOT NULL,
            configuration TEXT NOT NULL,
            payload BLOB NOT NULL
        );
        CREATE TABLE activation_conditions (
            session INTEGER PRIMARY KEY,
            can_activate_for BLOB,
            prefers_to_activate_for BLOB NOT NULL
        );
        """
}

extension Schema {
    /// Reads the version of an opened database, before anything is written to it: refuses a
    /// newer version and a database that is not scened's, so such a file is left untouched.
    static func inspect(_ db: SQLiteConnection, path: String) throws(StoreError) -> Int {
        let version = try db.integer("PRAGMA user_version", "reading the schema version") ?? 0
        let application = try db.integer("PRAGMA application_id", "reading the application id") ?? 0
        let objects = try db.integer("SELECT count(*) FROM sqlite_schema", "reading the schema") ?? 0
        if version == 0 && objects > 0 {
            throw StoreError(kind: .notADatabase, path: path,
                             message: "an SQLite database that already holds tables but no scened schema version, "
                                 + "not scened's")
        }
        if version != 0 && application != Int64(applicationID) {
            throw StoreError(kind: .notADatabase, path: path,
                             message: "an SQLite database of another application (application_id \(application)), not scened's")
        }
        if version > Int64(currentVersion) || version < 0 {
            throw StoreError(kind: .newerSchema(found: Int(version), supported: currentVersion), path: path,
                             message: "written by a newer scened: schema version \(version), this scened supports "
                                 + "versions up to \(currentVersion); refusing to open it")
        }
        return Int(version)
    }

    /// Applies migrations[from..<to] and sets user_version, all in one transaction.
    static func migrate(_ db: SQLiteConnection, from: Int, to: Int) throws(StoreError) {
        try db.execute("BEGIN IMMEDIATE", "starting the schema migration")
        do throws(StoreError) {
            for v in from..<to {
                let step = v == 0 ? "creating the schema (version 1)" : "migrating the schema from version \(v) to \(v + 1)"
                try db.execute(migrations[v], step)
            }
            try db.execute("PRAGMA user_version = \(to)", "setting the schema version")
            try db.execute("COMMIT", "committing the schema migration")
        } catch {
            if db.inTransaction { try? db.execute("ROLLBACK", "rolling back") }
            throw error
        }
    }
}
