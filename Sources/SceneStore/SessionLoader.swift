import CSQLite
import SceneCore

/// Reads and checks sessions rows: the hot path of start-up, so a large table is read in two
/// id ranges at once, each on its own connection and thread (`SceneStore.loadSessions`), each
/// writing its sessions straight into its own part of the one array the engine adopts.
///
/// App ids and configuration names come from the store's dictionaries by index, so every
/// session shares one copy of each; only userInfo and restoration data are decoded (and
/// checked) per row.
struct SessionLoader: Sendable {
    let appsByRef: [AppID?]
    let configurationsByRef: [String?]
    let quarantinedApps: Set<Int64>
    /// Large payloads left in the store, only their sizes read (see `SceneStore.loadTables`).
    let deferring: Bool

    /// The same loader with app ids and configuration names of its own storage, for the
    /// helper thread: every session holds a reference to its app id and configuration name,
    /// and two threads counting references on the same few strings contend for their cache
    /// lines.
    func withOwnStrings() -> SessionLoader {
        func copy(_ s: String) -> String { String(decoding: Array(s.utf8), as: UTF8.self) }
        return SessionLoader(appsByRef: appsByRef.map { $0.flatMap { AppID(copy($0.rawValue)) } },
                             configurationsByRef: configurationsByRef.map { $0.map(copy) },
                             quarantinedApps: quarantinedApps, deferring: deferring)
    }

    /// What one range's read found.
    struct Rows: Sendable {
        /// Sessions written to the buffer, from its start.
        var written = 0
        var quarantined: [QuarantinedRow] = []
        /// Past the highest id seen, quarantined rows included.
        var sessionFloor: UInt64 = 1
    }

    /// The rows with `range`'s ids, in id order, into `buffer[0..<capacity]`. A row beyond
    /// `capacity` means the table changed under the counts (it cannot in one snapshot): an
    /// error, never a write past the part given. On a throw nothing written is left initialized.
    func read(_ db: SQLiteConnection, ids range: ClosedRange<Int64>, into buffer: UnsafeMutablePointer<SceneSession>,
              capacity: Int) throws(StoreError) -> Rows {
        var rows = Rows()
        do throws(StoreError) {
            try read(db, range, buffer, capacity, &rows)
        } catch {
            buffer.deinitialize(count: rows.written)
            throw error
        }
        return rows
    }

    private func read(_ db: SQLiteConnection, _ range: ClosedRange<Int64>, _ buffer: UnsafeMutablePointer<SceneSession>,
                      _ capacity: Int, _ rows: inout Rows) throws(StoreError) {
        let s = try prepareSelect(db, range)
        defer { s.finalize() }
        // Local copies: elements of a let array are lent to the calls below without the
        // reference counting (and exclusivity checks) that reading through `self` costs.
        let appsByRef = self.appsByRef, configurationsByRef = self.configurationsByRef
        while true {
            let rc = s.step()
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw db.error(rc, "loading sessions") }
            let key = s.int64(0)
            if RowCheck.isStoredNumber(key) { rows.sessionFloor = max(rows.sessionFloor, UInt64(key) + 1) }
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
            let (userInfo, restoration) = payloads(&check)
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
                rows.quarantined.append(QuarantinedRow(table: .sessions, key: key, reason: problem))
                continue
            }
            guard rows.written < capacity else {
                throw StoreError(kind: .corrupt, path: db.path,
                                 message: "the sessions table holds more rows than it counted in the same transaction")
            }
            (buffer + rows.written).initialize(to: SceneSession(
                id: SessionID(UInt64(key)), app: app!, role: role!, configurationName: configuration,
                savedUserInfo: userInfo, savedRestoration: restoration, footprint: footprint,
                condition: condition!, sceneState: sceneState!, sceneInstance: sceneInstance, createdAt: createdAt,
                lastActiveAt: lastActiveAt, backgroundSince: backgroundSince, activations: activations,
                restores: restores, restoreCostMs: restoreCost, isProtected: isProtected, activationScore: s.double(17)))
            rows.written += 1
        }
    }

    /// The select of `range`'s rows, in id order.
    private func prepareSelect(_ db: SQLiteConnection, _ range: ClosedRange<Int64>) throws(StoreError) -> Statement {
        // Deferred, a large payload reads as NULL: SQLite then never loads its overflow pages.
        let limit = savedPayloadInlineLimit
        let payloads = deferring
            ? "CASE WHEN user_info_size <= \(limit) THEN user_info END, "
                + "CASE WHEN restoration_size <= \(limit) THEN restoration END"
            : "user_info, restoration"
        return try db.prepare("""
            SELECT id, app, role, configuration, \(payloads), footprint, condition, scene_state,
                   scene_instance, created_at, last_active_at, background_since, activations, restores,
                   restore_cost_ms, protected, activation_score, user_info_size, restoration_size
            FROM sessions WHERE id BETWEEN \(range.lowerBound) AND \(range.upperBound) ORDER BY id
            """, persistent: false, "loading sessions")
    }

    /// The row's userInfo and restoration data; deferred, a large one only by its size.
    @inline(__always)
    private func payloads(_ check: inout RowCheck) -> (SavedPayload<UserInfo>, SavedPayload<RestorationData?>) {
        guard deferring else {
            return (.held(UserInfo(json: check.jsonObject(4, "user_info"))), .held(check.restoration(5, "restoration")))
        }
        let limit = Int64(savedPayloadInlineLimit)
        let userInfoSize = check.integer(18, "user_info_size")
        let restorationSize = check.integer(19, "restoration_size")
        if check.isValid && (userInfoSize < 0 || restorationSize < 0) {
            check.fail("a payload size is negative (\(userInfoSize), \(restorationSize))")
        }
        let userInfo: SavedPayload<UserInfo> = userInfoSize > limit ? .stored(byteCount: Int(userInfoSize))
            : .held(UserInfo(json: check.jsonObject(4, "user_info")))
        let restoration: SavedPayload<RestorationData?> = restorationSize > limit ? .stored(byteCount: Int(restorationSize))
            : .held(check.restoration(5, "restoration"))
        return (userInfo, restoration)
    }

    /// The app a session or task row names, if it is stored and not quarantined.
    static func app(ref: Int64, _ appsByRef: [AppID?], _ quarantinedApps: Set<Int64>,
                    _ check: inout RowCheck) -> AppID? {
        guard check.isValid else { return nil }
        guard ref > 0, ref < appsByRef.count, let app = appsByRef[Int(ref)] else {
            check.fail("app reference \(ref) names no app")
            return nil
        }
        // Nearly always empty: a million rows skip a million hashes.
        if !quarantinedApps.isEmpty && quarantinedApps.contains(ref) {
            check.fail("its app \(app) (apps row \(ref)) is quarantined")
        }
        return app
    }
}
