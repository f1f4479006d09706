import CSQLite
import SceneCore

/// scened's persistent state in one SQLite database (WAL): apps with their pending discards and
/// active background modes, sessions, background tasks, scheduled tasks, pending notifications,
/// the counters (clock, sequence and identifier high-water marks) and a bounded log of recent
/// events.
///
/// Single-threaded: the daemon's loop thread owns it. Every mutation goes through `commit`, one
/// transaction per loop iteration.
public final class SceneStore {
    /// The schema this build reads and writes; older files are migrated forward on open.
    public static var schemaVersion: Int { Schema.currentVersion }

    public let path: String
    public let durability: Durability
    /// How many of the most recent sequence numbers the event log keeps.
    public let eventLogCapacity: Int

    var connection: SQLiteConnection?
    var file: DatabaseFile?
    var statements: Statements?

    /// Identifiers stored once and referred to by number (schema v2). Refs are assigned here,
    /// densely from 1, so lookups by ref are array indexes. A quarantined row's ref stays taken
    /// (nil in the array, or in the reserved set when it lies beyond the rows), so that no new
    /// identifier is ever written over it.
    var appRefs: [AppID: Int64] = [:]
    var appsByRef: [AppID?] = [nil]
    var configurationRefs: [String: Int64] = [:]
    var configurationsByRef: [String?] = [nil]
    var reservedAppRefs: Set<Int64> = []
    var reservedConfigurationRefs: Set<Int64> = []

    /// The sequence numbers physically in the events table (trimming leaves some slack).
    var loggedOldest: UInt64?
    var loggedNewest: UInt64?
    /// The cutoff of a trim inside the open transaction, applied to `loggedOldest` on commit.
    var pendingTrim: UInt64?
    /// The committed sequence high-water mark: an event numbered below it would reuse a number.
    var sequenceFloor: UInt64 = 1
    /// The session and task high-water marks committed or loaded: what one commit's allocations
    /// are measured from (`Tuning.maxAllocationsPerCommit`).
    var sessionFloor: UInt64 = 1
    var taskFloor: UInt64 = 1
    var notificationFloor: UInt64 = 1
    var openFloor: UInt64 = 1

    /// How many id ranges the last load read the sessions in, each on its own thread (tests).
    var lastLoadRanges = 0
    /// The sizes of the array's parts the last load gave the ranges (tests): id spans, or counts.
    var lastLoadParts: [Int] = []

    /// Apps and configurations rows found damaged when the dictionaries were read at open.
    var dictionaryQuarantine: [QuarantinedRow] = []
    /// Event-log rows found damaged when read, and those of them not yet in the quarantine table.
    public internal(set) var quarantinedEvents: [QuarantinedRow] = []
    var quarantinedEventKeys: Set<Int64> = []
    var unrecordedQuarantine: [QuarantinedRow] = []

    /// What the write-ahead log held when the store opened it (see `WALInspection`).
    public private(set) var logInspection: WALInspection = .absent
    /// What opening with `recover: true` did about a damaged log; nil when there was nothing
    /// to recover.
    public private(set) var recovery: LogRecovery?

    /// Opens the database at `path`, creating the file if it does not exist (the directory must).
    /// Migrates an older schema forward in one transaction; refuses a newer one, a file that is
    /// not a scened database, a damaged one, one another process holds, or one that cannot be
    /// written. Never re-creates or overwrites an existing file.
    ///
    /// Before SQLite opens it, the write-ahead log is checked (`WALInspector`). A damaged log
    /// (committed transactions that SQLite would drop silently) is copied aside, with the
    /// database and the wal-index, into `damaged-<UTC time>/` beside the database, and refused
    /// (`.damagedLog`) unless `recover` is set; then SQLite replays the intact prefix and the
    /// counters are raised past anything the lost transactions can have handed out (`recovery`).
    public init(path: String, durability: Durability = .full, eventLogCapacity: Int = 100_000,
                recover: Bool = false) throws(StoreError) {
        self.path = path
        self.durability = durability
        guard eventLogCapacity >= 0 else {
            throw StoreError(kind: .misuse, path: path, message: "negative event log capacity \(eventLogCapacity)")
        }
        self.eventLogCapacity = eventLogCapacity
        let file = try DatabaseFile.open(path: path)
        self.file = file
        do throws(StoreError) {
            // Under our lock (no other scened writes the log now) and before SQLite replays it.
            let inspection = try WALInspector.inspect(walPath: path + "-wal", shmPath: path + "-shm")
            logInspection = inspection
            var evidence: DamageEvidence?
            if inspection.condition == .damaged {
                let saved = try DamageEvidence.preserve(databasePath: path)
                evidence = saved
                guard recover else {
                    throw StoreError(kind: .damagedLog(evidence: saved.directory), path: path,
                                     message: "the write-ahead log \(path)-wal is damaged: \(inspection.summary); "
                                         + "the database, the log and the wal-index are \(saved.reused ? "already " : "")"
                                         + "copied to \(saved.directory)")
                }
            }
            let db = try SQLiteConnection(path: path)
            connection = db
            // Refuse what is not ours before anything (even the switch to WAL) writes to it.
            let version = try Schema.inspect(db, path: path)
            try configure(db)
            if version < Schema.currentVersion {
                try Schema.migrate(db, from: version, to: Schema.currentVersion)
            }
            if let evidence {
                recovery = try recoverFromDamagedLog(db, inspection: inspection, evidence: evidence)
            }
            try checkOnOpen(db)
            statements = try Statements(db)
            try readDictionaries(db)
            try readLogBounds(db)
            let counters = try readCounters(db)
            sequenceFloor = max(counters.nextSequence, (loggedNewest ?? 0) &+ 1)
            sessionFloor = counters.nextSessionNumber
            taskFloor = counters.nextTaskNumber
            notificationFloor = counters.nextNotificationNumber
            openFloor = counters.nextOpenNumber
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Closes the database and releases the lock. Further calls throw `.misuse`.
    public func close() {
        statements?.finalize()
        statements = nil
        connection?.close()
        connection = nil
        // Only now: closing this descriptor while SQLite had the file open could drop SQLite's
        // own POSIX locks.
        file?.close()
        file = nil
    }

    // MARK: - Opening

    /// WAL and the connection's settings; sizes and their reasons are in `Tuning`.
    private func configure(_ db: SQLiteConnection) throws(StoreError) {
        let mode = try db.texts("PRAGMA journal_mode = WAL", "setting WAL mode").first ?? ""
        guard mode.lowercased() == "wal" else {
            throw StoreError(kind: .notWritable, path: path, message: "cannot switch to WAL mode (journal_mode is \(mode))")
        }
        // SQLite falls back to read-only when it cannot write the file; a daemon must not.
        if sqlite3_db_readonly(db.handle, "main") == 1 {
            throw StoreError(kind: .notWritable, path: path, message: "SQLite opened the database read-only")
        }
        try db.execute("""
            PRAGMA synchronous = \(durability.pragma);
            PRAGMA journal_size_limit = \(Tuning.journalSizeLimit);
            PRAGMA cache_size = \(Tuning.cacheSizeKiB);
            PRAGMA cell_size_check = ON;
            PRAGMA secure_delete = FAST;
            PRAGMA trusted_schema = OFF;
            """, "configuring the connection")
        _ = db.watchLog(checkpointAt: Tuning.walAutocheckpointPages)
        // cell_size_check: every b-tree page read is sanity-checked as it is loaded, so damage
        // surfaces as SQLITE_CORRUPT where it is read (part of the cheap check, see below).
        // secure_delete: Debian builds SQLite with it on, zeroing every deleted row (each event-log
        // trim); FAST zeroes only where that costs no extra page write.
        // trusted_schema: a tampered file's schema may not call functions behind our back.
    }

    /// The cheap corruption check. A full `PRAGMA quick_check` reads every page, a large share
    /// of the start-up budget with many sessions. Instead: SQLite has already parsed page 1 and
    /// the schema; every table but sessions gets a real b-tree check (quick_check of a table:
    /// the event log is bounded and the rest is small); sessions has both ends of its b-tree
    /// read here, and all of it read by load(), with cell_size_check on so each page is checked
    /// as it comes in. `integrityCheck()` is the full check, for operators.
    private func checkOnOpen(_ db: SQLiteConnection) throws(StoreError) {
        for table in ["counters", "apps", "configurations", "tasks", "schedules", "notifications", "events", "opens",
                      "activation_conditions"] {
            let result = try db.texts("PRAGMA quick_check(\(table))", "checking table \(table)")
            guard result == ["ok"] else {
                throw StoreError(kind: .corrupt, path: path,
                                 message: "table \(table) is damaged: \(result.prefix(3).joined(separator: "; "))")
            }
        }
        // One min() or max() per query: SQLite answers those from the b-tree's end; both in one
        // query would scan the table.
        _ = try db.integer("SELECT min(id) FROM sessions", "checking table sessions")
        _ = try db.integer("SELECT max(id) FROM sessions", "checking table sessions")
    }

    /// App identifiers and configuration names by reference. A row that does not decode, or
    /// names an identifier or name another row has, or a reference beyond the rows (refs are
    /// dense from 1 and never deleted) is quarantined, and its reference stays taken.
    private func readDictionaries(_ db: SQLiteConnection) throws(StoreError) {
        dictionaryQuarantine = []
        let appRows = try db.integer("SELECT count(*) FROM apps", "reading apps") ?? 0
        let apps = try db.prepare("SELECT ref, id FROM apps ORDER BY ref", persistent: false, "reading apps")
        defer { apps.finalize() }
        while true {
            let rc = apps.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "reading apps") }
            let ref = apps.int64(0)
            var check = RowCheck(apps)
            let text = check.text(1, "id")
            let id = AppID(text)
            if check.isValid && id == nil {
                check.fail("id \(RowCheck.excerpt(apps.textBytes(1))) is not a reverse-DNS app identifier")
            }
            if ref < 1 || ref > appRows { check.fail("reference \(ref) lies outside 1–\(appRows), where references are") }
            if let id, let other = appRefs[id] { check.fail("app \(id) is stored again, as apps row \(other)") }
            if let problem = check.problem {
                dictionaryQuarantine.append(QuarantinedRow(table: .apps, key: ref, reason: problem))
                reserve(ref, in: &appsByRef, beyond: &reservedAppRefs, rows: appRows)
                continue
            }
            try remember(app: id!, ref: ref)
        }
        let configurationRows = try db.integer("SELECT count(*) FROM configurations", "reading configurations") ?? 0
        let configurations = try db.prepare("SELECT ref, name FROM configurations ORDER BY ref", persistent: false,
                                            "reading configurations")
        defer { configurations.finalize() }
        while true {
            let rc = configurations.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "reading configurations") }
            let ref = configurations.int64(0)
            var check = RowCheck(configurations)
            let name = check.text(1, "name")
            if ref < 1 || ref > configurationRows {
                check.fail("reference \(ref) lies outside 1–\(configurationRows), where references are")
            }
            if check.isValid, let other = configurationRefs[name] {
                check.fail("configuration name \"\(name)\" is stored again, as configurations row \(other)")
            }
            if let problem = check.problem {
                dictionaryQuarantine.append(QuarantinedRow(table: .configurations, key: ref, reason: problem))
                reserve(ref, in: &configurationsByRef, beyond: &reservedConfigurationRefs, rows: configurationRows)
                continue
            }
            try remember(configuration: name, ref: ref)
        }
    }

    /// Keeps a quarantined row's reference from being assigned again.
    private func reserve<T>(_ ref: Int64, in byRef: inout [T?], beyond reserved: inout Set<Int64>, rows: Int64) {
        if ref >= 1 && ref <= rows {
            while byRef.count <= Int(ref) { byRef.append(nil) }
        } else if ref >= 1 {
            reserved.insert(ref)
        }
    }

    func remember(app: AppID, ref: Int64) throws(StoreError) {
        guard ref >= 1, ref < Int64(Int32.max), appRefs[app] == nil else { throw corrupt("apps row \(ref): bad reference") }
        while appsByRef.count <= Int(ref) { appsByRef.append(nil) }
        appsByRef[Int(ref)] = app
        appRefs[app] = ref
    }

    func remember(configuration: String, ref: Int64) throws(StoreError) {
        guard ref >= 1, ref < Int64(Int32.max), configurationRefs[configuration] == nil else {
            throw corrupt("configurations row \(ref): bad reference")
        }
        while configurationsByRef.count <= Int(ref) { configurationsByRef.append(nil) }
        configurationsByRef[Int(ref)] = configuration
        configurationRefs[configuration] = ref
    }

    /// The next free references: past every row, skipping any a quarantined row keeps.
    func newAppRef() -> Int64 {
        while reservedAppRefs.contains(Int64(appsByRef.count)) { appsByRef.append(nil) }
        return Int64(appsByRef.count)
    }

    func newConfigurationRef() -> Int64 {
        while reservedConfigurationRefs.contains(Int64(configurationsByRef.count)) { configurationsByRef.append(nil) }
        return Int64(configurationsByRef.count)
    }

    /// The counters row. It cannot be quarantined (nothing could be handed out without it), so
    /// a damaged one refuses the open.
    func readCounters(_ db: SQLiteConnection) throws(StoreError) -> EngineCounters {
        let c = try db.prepare("""
            SELECT clock, next_sequence, next_session, next_task, next_notification, next_open FROM counters WHERE id = 1
            """, persistent: false, "reading the counters")
        defer { c.finalize() }
        let rc = c.step()
        guard rc == SQLITE_ROW else {
            throw rc == SQLITE_DONE ? corrupt("the counters row is missing") : db.error(rc, "reading the counters")
        }
        var check = RowCheck(c)
        let clock = check.timestamp(0, "clock")
        func counter(_ column: Int32, _ name: StaticString, _ check: inout RowCheck) -> UInt64 {
            let v = check.integer(column, name)
            if check.isValid && !RowCheck.isStoredNumber(v) { check.fail("\(name) is \(v), outside 1..<2^62") }
            return UInt64(bitPattern: v)
        }
        let values = [counter(1, "next_sequence", &check), counter(2, "next_session", &check),
                      counter(3, "next_task", &check), counter(4, "next_notification", &check),
                      counter(5, "next_open", &check)]
        if let problem = check.problem { throw corrupt("the counters row is damaged: \(problem)") }
        return EngineCounters(clock: clock, nextSequence: values[0], nextSessionNumber: values[1], nextTaskNumber: values[2],
                              nextNotificationNumber: values[3], nextOpenNumber: values[4])
    }

    // MARK: - Shared

    func openConnection() throws(StoreError) -> (SQLiteConnection, Statements) {
        guard let connection, let statements else {
            throw StoreError(kind: .misuse, path: path, message: "the store is closed")
        }
        return (connection, statements)
    }

    func corrupt(_ what: String) -> StoreError {
        StoreError(kind: .corrupt, path: path, message: "database content is damaged: \(what)")
    }

    /// Whether the next commit may run a checkpoint (its fsyncs take milliseconds): the log is
    /// within `Tuning.checkpointMarginFrames` of the checkpoint's length, or its length is not
    /// known yet.
    public var checkpointNear: Bool {
        guard let log = connection?.log else { return true }
        return log.frames >= log.checkpointAt - Tuning.checkpointMarginFrames
    }

    /// PRAGMA integrity_check: every page, index and constraint. ["ok"] when sound, else what is
    /// wrong; throws `.corrupt` when the damage stops the check itself. Reads the whole file, so
    /// it is for operators and tests, not the start-up path.
    public func integrityCheck() throws(StoreError) -> [String] {
        let (db, _) = try openConnection()
        return try db.texts("PRAGMA integrity_check", "checking integrity")
    }
}
